//! Credentials written into a plan. The plan's text is stored with every
//! run (the manifest holds it, so that the run can be repeated), so a key in
//! it would be written to the results: qexp refuses such a plan and says
//! where the key belongs instead, an environment variable.

/// Words of a name that mark its value as a credential.
const MARKS: [&str; 10] = [
    "KEY",
    "APIKEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "AUTH",
    "AUTHORIZATION",
    "CREDENTIAL",
    "CREDENTIALS",
];

/// Words before `KEY` that make it a request's or a cache's key, not a
/// credential: OpenAI's `prompt_cache_key`, an `idempotency_key`, a
/// `routing_key` are fields a body may carry.
const NOT_CREDENTIAL_KEYS: [&str; 5] = ["CACHE", "IDEMPOTENCY", "ROUTING", "SORT", "PARTITION"];

/// Whether `name` names a credential: one of its words (split at anything
/// not a letter or digit) is a mark, so `HF_TOKEN`, `api_key` and
/// `Authorization` do and `TOKENIZERS_PARALLELISM` or `max_tokens` do not;
/// `KEY` after a word of [`NOT_CREDENTIAL_KEYS`] (`prompt_cache_key`) does
/// not either.
/// Narrower on purpose than qexp-deploy's redaction of a start record,
/// which hides the value of any name that merely contains a mark: a
/// refusal that is wrong stops a run, a redaction that is wrong hides a
/// harmless value.
pub(crate) fn secret_name(name: &str) -> bool {
    let words: Vec<String> = name
        .split(|c: char| !c.is_ascii_alphanumeric())
        .map(|w| w.to_ascii_uppercase())
        .collect();
    words.iter().enumerate().any(|(i, word)| {
        MARKS.contains(&word.as_str())
            && !(word == "KEY" && i > 0 && NOT_CREDENTIAL_KEYS.contains(&words[i - 1].as_str()))
    })
}

/// Whether a value under a credential's name is written out: not empty
/// and with no placeholder (`{api_key}` hands over the run's key, which
/// never enters the plan's text).
pub(crate) fn literal(value: &str) -> bool {
    !value.is_empty() && !value.contains('{')
}

/// The first flag of `argv` that names a credential and is given a value
/// written out (`--api-key KEY` or `--api-key=KEY`).
pub(crate) fn secret_flag(argv: &[String]) -> Option<&str> {
    argv.iter().enumerate().find_map(|(j, arg)| {
        let flag = arg.strip_prefix('-')?;
        let (flag, inline) = match flag.split_once('=') {
            Some((f, v)) => (f, Some(v)),
            None => (flag, None),
        };
        if !secret_name(flag.trim_start_matches('-')) {
            return None;
        }
        let value = inline.or_else(|| argv.get(j + 1).map(String::as_str))?;
        (literal(value) && !value.starts_with('-')).then_some(arg.split('=').next().unwrap_or(arg))
    })
}

/// Whether `url` carries a user or password (`https://user:key@host`).
pub(crate) fn url_credentials(url: &str) -> bool {
    let Some((_, rest)) = url.split_once("://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    authority.contains('@')
}

/// The dotted path of the first key of `table` (searched through nested
/// tables and arrays) that names a credential and holds a value written
/// out: a non-empty string or a number.
pub(crate) fn secret_in_table(table: &toml::Table, prefix: &str) -> Option<String> {
    table.iter().find_map(|(k, v)| {
        let path = format!("{prefix}.{k}");
        if secret_name(k) && written_out(v) {
            return Some(path);
        }
        secret_in_value(v, &path)
    })
}

fn secret_in_value(v: &toml::Value, path: &str) -> Option<String> {
    match v {
        toml::Value::Table(t) => secret_in_table(t, path),
        toml::Value::Array(a) => a
            .iter()
            .enumerate()
            .find_map(|(i, v)| secret_in_value(v, &format!("{path}[{i}]"))),
        _ => None,
    }
}

fn written_out(v: &toml::Value) -> bool {
    match v {
        toml::Value::String(s) => literal(s),
        toml::Value::Integer(_) | toml::Value::Float(_) => true,
        _ => false,
    }
}

/// The refusal of a credential written out: what was found, then where
/// the credential goes instead.
pub(crate) fn refusal(found: &str) -> String {
    format!("{found}: {WHERE_KEYS_GO}")
}

/// What was found: a user or password in a URL.
pub(crate) const IN_URL: &str = "a user or password in the URL";

/// What was found: a value under a credential's name.
pub(crate) const HELD: &str = "holds a credential";

/// What to do instead.
const WHERE_KEYS_GO: &str = "the plan's text is stored with every run, so a credential in it would be written to the results; \
     name the variable that holds the server's key with target.api_key_env (a launched server gets it \
     through {api_key}), and export what else it needs (e.g. HF_TOKEN) where qexp runs: it inherits \
     qexp's environment";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_names_are_told_by_their_words() {
        for name in [
            "HF_TOKEN",
            "api_key",
            "OPENAI_API_KEY",
            "Authorization",
            "db-password",
            "apiKey.x",
            "aws_secret_access_key",
            "X-Auth",
        ] {
            assert!(secret_name(name), "{name}");
        }
        for name in [
            "TOKENIZERS_PARALLELISM",
            "max_tokens",
            "keyword",
            "monkey",
            "CUDA_VISIBLE_DEVICES",
            "ignore_eos",
            "author",
            "prompt_cache_key",
            "idempotency_key",
        ] {
            assert!(!secret_name(name), "{name}");
        }
    }

    #[test]
    fn a_flag_given_a_key_is_found_and_its_placeholder_is_not() {
        let argv = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            secret_flag(&argv(&["vllm", "serve", "m", "--api-key", "sk-1"])),
            Some("--api-key")
        );
        assert_eq!(
            secret_flag(&argv(&["x", "--hf-token=hf_1"])),
            Some("--hf-token")
        );
        for fine in [
            &["vllm", "--api-key", "{api_key}"][..],
            &["x", "--api-key={api_key}"],
            &["x", "--disable-auth", "--port", "{port}"],
            &[
                "x",
                "--max-num-batched-tokens",
                "2048",
                "--ssl-keyfile",
                "k.pem",
            ],
            &["x", "--api-key"],
        ] {
            assert_eq!(secret_flag(&argv(fine)), None, "{fine:?}");
        }
    }

    #[test]
    fn a_user_or_password_in_a_url_is_found() {
        assert!(url_credentials("https://user:sk-123@api.example.com/v1"));
        assert!(url_credentials("http://token@127.0.0.1:8000"));
        assert!(!url_credentials("http://127.0.0.1:8000/v1?x=a@b"));
        assert!(!url_credentials("https://host/path/a@b"));
        assert!(!url_credentials("sim:fast"));
    }

    #[test]
    fn a_credential_nested_in_a_body_is_named_by_its_path() {
        let t: toml::Table =
            toml::from_str("ignore_eos = true\n[kw]\nlist = [{ api_key = \"sk-1\" }]\n").unwrap();
        assert_eq!(
            secret_in_table(&t, "target.extra_body").as_deref(),
            Some("target.extra_body.kw.list[0].api_key")
        );
        let fine: toml::Table = toml::from_str(
            "api_key = \"\"\nmax_tokens = 3\nuse_auth = true\n[auth]\nmode = \"none\"\n",
        )
        .unwrap();
        assert_eq!(secret_in_table(&fine, "target.extra_body"), None);
    }
}
