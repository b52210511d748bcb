//! What the runner sends requests through: the HTTP client, or a fake with
//! known timing in tests.

use qexp_client::{Client, GenRequest, Outcome};
use std::future::Future;

/// What the scheduler sends requests through. The HTTP client is the real
/// one; tests use fakes with known timing.
pub trait Backend: Send + Sync + 'static {
    /// Sends one request and measures it; never fails (failures are in the outcome).
    fn send(&self, req: GenRequest) -> impl Future<Output = Outcome> + Send;

    /// Gets ready for `in_flight` requests at once (opens connections);
    /// called before a point's measured requests, never measured itself.
    fn prepare(&self, in_flight: u32) -> impl Future<Output = ()> + Send {
        let _ = in_flight;
        async {}
    }
}

impl Backend for Client {
    async fn send(&self, req: GenRequest) -> Outcome {
        self.stream(&req).await
    }

    async fn prepare(&self, in_flight: u32) {
        self.warm_connections(in_flight).await;
    }
}
