//! Which environment values a start record may show.

use std::collections::BTreeMap;

use qexp_types::REDACTED;

/// Parts of a variable name that mark its value as secret.
const SECRET_MARKS: [&str; 5] = ["KEY", "TOKEN", "SECRET", "PASSWORD", "AUTH"];

/// The environment as recorded: values of secret-looking names redacted.
pub(crate) fn redact(env: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    env.iter()
        .map(|(name, value)| {
            let upper = name.to_ascii_uppercase();
            let secret = SECRET_MARKS.iter().any(|mark| upper.contains(mark));
            let shown = if secret { REDACTED } else { value.as_str() };
            (name.clone(), shown.to_owned())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_secret_looking_names_only() {
        let env: BTreeMap<String, String> = [
            ("HF_TOKEN", "abc"),
            ("openai_api_key", "k"),
            ("Db_Password", "p"),
            ("AUTHORIZATION", "a"),
            ("MY_SECRET_X", "s"),
            ("MODE", "x"),
            ("CUDA_VISIBLE_DEVICES", "0"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let shown = redact(&env);
        for name in [
            "HF_TOKEN",
            "openai_api_key",
            "Db_Password",
            "AUTHORIZATION",
            "MY_SECRET_X",
        ] {
            assert_eq!(shown[name], REDACTED, "{name}");
        }
        assert_eq!(shown["MODE"], "x");
        assert_eq!(shown["CUDA_VISIBLE_DEVICES"], "0");
    }
}
