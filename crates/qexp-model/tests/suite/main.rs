//! qexp-model's integration tests: the founding tables and their fit.

mod founding;
mod synthetic;
