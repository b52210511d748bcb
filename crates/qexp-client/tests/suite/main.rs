//! qexp-client's integration tests, as one test binary: every fault class
//! through the client against the simulator, a server that closes kept-alive
//! connections, errors and keep-alives that engines put in their streams
//! (played by a scripted server), fingerprints from recorded server
//! responses, and a bounded fuzz of the SSE parser.

mod closing_server;
mod faults;
mod fingerprint;
mod first_event;
mod script;
mod sse_fuzz;
mod stream_errors;
