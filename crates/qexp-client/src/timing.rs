//! The client's timing path as the typed value runs record.

use crate::client::Client;
use qexp_types::ClientTiming;

impl Client {
    /// How this client times streamed requests, as runs record it
    /// ([`Client::timing`] as a value, for the manifest and `qexp diff`).
    pub fn client_timing(&self) -> ClientTiming {
        // Both of `timing`'s sentences are ClientTiming's names (the test below
        // holds them together); reqwest is the path that has no reader of its own.
        ClientTiming::from_name(self.timing()).unwrap_or(ClientTiming::ReqwestFromWire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_paths_name_a_recorded_timing() -> Result<(), crate::ClientError> {
        let plain = Client::new(
            "http://127.0.0.1:9",
            None,
            std::time::Duration::from_secs(1),
        )?;
        assert_eq!(
            ClientTiming::from_name(plain.timing()),
            Some(ClientTiming::Http1FromWire)
        );
        assert_eq!(plain.client_timing(), ClientTiming::Http1FromWire);
        let reqwest = plain.over_reqwest();
        assert_eq!(
            ClientTiming::from_name(reqwest.timing()),
            Some(ClientTiming::ReqwestFromWire)
        );
        assert_eq!(reqwest.client_timing(), ClientTiming::ReqwestFromWire);
        Ok(())
    }
}
