//! What each request class (`[[workload.class]]`) sends beside the prompt:
//! its model (a LoRA adapter), vLLM's `priority` body field, and its
//! headers, their values read from the environment where the plan names a
//! variable. Resolved once before anything is sent, so that a missing
//! variable stops the run with nothing measured; the values are never
//! written to the run.

use crate::error::RunError;
use qexp_client::GenRequest;
use qexp_plan::Class;
use serde_json::Value;

/// One class's fields, ready to put on its requests.
#[derive(Debug, Clone, Default)]
pub(crate) struct ClassSend {
    /// The model its requests ask for, when not the target's.
    model: Option<String>,
    /// The `priority` body field, when the class has one.
    priority: Option<i64>,
    /// Headers with their values (from the plan or the environment).
    headers: Vec<(String, String)>,
    /// The values read from the environment: secrets, kept out of
    /// whatever the server sends back.
    secrets: Vec<String>,
}

impl ClassSend {
    /// Puts the class's model, priority and headers on `req`.
    pub(crate) fn apply(&self, req: &mut GenRequest) {
        if let Some(m) = &self.model {
            req.model.clone_from(m);
        }
        if let Some(p) = self.priority {
            req.extra.insert("priority".into(), Value::from(p));
        }
        req.headers.clone_from(&self.headers);
    }
}

/// Each class's fields in plan order; an error names the first header
/// whose environment variable is not set.
pub(crate) fn resolve(classes: &[Class]) -> Result<Vec<ClassSend>, RunError> {
    classes
        .iter()
        .map(|c| {
            let mut headers: Vec<(String, String)> = c
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let mut secrets = Vec::new();
            for (header, var) in &c.headers_env {
                let value = std::env::var(var)
                    .ok()
                    .filter(|v| qexp_plan::is_header_value(v))
                    .ok_or_else(|| RunError::MissingHeaderEnv {
                        class: c.name.get_ref().clone(),
                        header: header.clone(),
                        var: var.clone(),
                    })?;
                secrets.push(value.clone());
                headers.push((header.clone(), value));
            }
            Ok(ClassSend {
                model: c.model.clone(),
                priority: c.priority,
                headers,
                secrets,
            })
        })
        .collect()
}

/// Every header value the classes read from the environment, for the
/// client to redact; an error names the first variable that is not set.
pub(crate) fn secrets(classes: &[Class]) -> Result<Vec<String>, RunError> {
    Ok(resolve(classes)?
        .into_iter()
        .flat_map(|c| c.secrets)
        .collect())
}

/// The workload fingerprint's `classes` key: every class's name, share,
/// model, priority, header names (never values) and lengths, in plan order.
pub(crate) fn fingerprint(classes: &[Class]) -> Option<String> {
    if classes.is_empty() {
        return None;
    }
    let one = |c: &Class| {
        let headers: Vec<&str> = c
            .headers
            .keys()
            .chain(c.headers_env.keys())
            .map(String::as_str)
            .collect();
        let opt = |v: Option<String>| v.unwrap_or_else(|| "-".into());
        format!(
            "{} share {} model {} priority {} headers [{}] input {} output {}",
            c.name.get_ref(),
            c.share.get_ref(),
            opt(c.model.clone()),
            opt(c.priority.map(|p| p.to_string())),
            headers.join(","),
            opt(c.input_tokens.as_ref().map(|l| l.get_ref().to_string())),
            opt(c.output_tokens.as_ref().map(|l| l.get_ref().to_string())),
        )
    };
    Some(classes.iter().map(one).collect::<Vec<_>>().join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use qexp_plan::ApiKind as Api;
    use toml::Spanned;

    fn class(headers_env: &[(&str, &str)]) -> Class {
        Class {
            name: Spanned::new(0..0, "tenant-a".into()),
            share: Spanned::new(0..0, 1.0),
            model: Some("adapter-a".into()),
            priority: Some(-2),
            headers: [("x-tenant".to_string(), "a".to_string())].into(),
            headers_env: headers_env
                .iter()
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect(),
            input_tokens: None,
            output_tokens: None,
        }
    }

    #[test]
    fn a_class_sends_its_model_priority_and_headers() {
        let sends = resolve(&[class(&[])]).unwrap();
        let mut req = GenRequest {
            api: Api::Chat,
            model: "base".into(),
            prompt: "hi".into(),
            max_tokens: 1,
            extra: Default::default(),
            history: None,
            batch: 1,
            headers: Vec::new(),
            images: Default::default(),
        };
        sends[0].apply(&mut req);
        assert_eq!(req.model, "adapter-a");
        assert_eq!(req.body(true)["priority"], -2);
        assert_eq!(req.headers, [("x-tenant".to_string(), "a".to_string())]);
    }

    #[test]
    fn a_header_from_an_unset_variable_stops_the_run_and_values_stay_out_of_the_fingerprint() {
        let unset = "QEXP_TEST_CLASS_HEADER_NEVER_SET";
        let err = resolve(&[class(&[("x-token", unset)])]).unwrap_err();
        assert!(err.to_string().contains(unset), "{err}");
        let f = fingerprint(&[class(&[("x-token", unset)])]).unwrap();
        assert!(f.contains("headers [x-tenant,x-token]"), "{f}");
        assert!(!f.contains(unset));
        assert_eq!(fingerprint(&[]), None);
    }
}
