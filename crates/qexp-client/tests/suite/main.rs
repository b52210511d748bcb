//! qexp-client's integration tests, as one test binary: every fault class
//! through the client against the simulator, a server that closes kept-alive
//! connections, fingerprints from recorded server responses, and a bounded
//! fuzz of the SSE parser.

mod closing_server;
mod faults;
mod fingerprint;
mod sse_fuzz;
