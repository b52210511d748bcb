use qexp_client::{Client, GenRequest, Outcome};
use std::future::Future;

/// What the scheduler sends requests through. The HTTP client is the real
/// one; tests use fakes with known timing.
pub trait Backend: Send + Sync + 'static {
    /// Sends one request and measures it; never fails (failures are in the outcome).
    fn send(&self, req: GenRequest) -> impl Future<Output = Outcome> + Send;
}

impl Backend for Client {
    async fn send(&self, req: GenRequest) -> Outcome {
        self.stream(&req).await
    }
}
