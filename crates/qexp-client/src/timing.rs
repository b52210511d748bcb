//! The client's timing path as the typed value runs record.

use crate::client::Client;
use qexp_types::ClientTiming;

impl Client {
    /// How this client times streamed requests, as runs record it
    /// ([`Client::timing`] as a value, for the manifest and `qexp diff`).
    pub fn client_timing(&self) -> ClientTiming {
        // Each of `timing`'s sentences is a ClientTiming name (the test below
        // holds them together); reqwest is the path that has no reader of its own.
        ClientTiming::from_name(self.timing()).unwrap_or(ClientTiming::ReqwestFromWire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_path_names_a_recorded_timing() -> Result<(), crate::ClientError> {
        let plain = Client::new(
            "http://127.0.0.1:9",
            None,
            std::time::Duration::from_secs(1),
        )?;
        let off =
            crate::rx_stamp::switched_off(std::env::var(crate::rx_stamp::ENV).ok().as_deref());
        // Kernel stamps by default where the platform has them.
        let default = if cfg!(target_os = "linux") && !off {
            ClientTiming::Http1KernelStamps
        } else {
            ClientTiming::Http1FromWire
        };
        assert_eq!(ClientTiming::from_name(plain.timing()), Some(default));
        assert_eq!(plain.client_timing(), default);
        let unstamped = plain.clone().with_kernel_stamps(false);
        assert_eq!(
            ClientTiming::from_name(unstamped.timing()),
            Some(ClientTiming::Http1FromWire)
        );
        let reqwest = plain.over_reqwest();
        assert_eq!(
            ClientTiming::from_name(reqwest.timing()),
            Some(ClientTiming::ReqwestFromWire)
        );
        assert_eq!(reqwest.client_timing(), ClientTiming::ReqwestFromWire);
        // Asking reqwest for kernel stamps changes nothing: it has none.
        let reqwest = reqwest.with_kernel_stamps(true);
        assert_eq!(reqwest.client_timing(), ClientTiming::ReqwestFromWire);
        Ok(())
    }
}
