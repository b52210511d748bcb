//! Answers with a form: a tool call when a chat request sends `tools` (and
//! a `tool_choice` other than `"none"`), JSON when it sends a
//! `response_format` of type `json_schema` or `json_object`.
//!
//! The answer is a JSON value made from the schema ([`sample`]: an object
//! with every listed property, the first of an `enum` or `anyOf`, a word
//! of the answer's prose for a string, the least allowed number), streamed
//! a few characters per token; tokens past its end are spaces, which JSON
//! allows after a value, so the stream keeps the length the engine gives
//! it. A `max_tokens` too short for the value cuts it, as it would a real
//! model's. The profile's `malformed_share` (plus `malformed_share_per_seq`
//! per sequence in the batch beyond the first) makes a seeded share of them
//! malformed: the value's last character is left out.

use serde_json::{Map, Value};

use crate::prose::Prose;

/// Characters of the JSON text per token.
const CHARS_PER_TOKEN: usize = 4;
/// Nesting deeper than this is answered with `null`.
const MAX_DEPTH: u32 = 8;

/// What a request asks the answer's form to be.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Form {
    /// A call of the tool `name`, whose arguments match `parameters`.
    Tool {
        /// `function.name`.
        name: String,
        /// `function.parameters`.
        parameters: Value,
    },
    /// Text that is JSON matching `schema`.
    Json {
        /// The response schema.
        schema: Value,
    },
}

impl Form {
    /// The form a chat request asks for: its tool (the named one, else the
    /// first) unless `tool_choice` is `"none"`, else its response format.
    pub(crate) fn of(
        tools: Option<&Value>,
        choice: Option<&Value>,
        response_format: Option<&Value>,
    ) -> Option<Form> {
        let tools = tools.and_then(Value::as_array).filter(|t| !t.is_empty());
        if let (Some(tools), false) = (tools, choice.and_then(Value::as_str) == Some("none")) {
            let named = choice
                .and_then(|c| c.pointer("/function/name"))
                .and_then(Value::as_str);
            let tool = tools
                .iter()
                .find(|t| {
                    named.is_some() && t.pointer("/function/name").and_then(Value::as_str) == named
                })
                .unwrap_or(&tools[0]);
            return Some(Form::Tool {
                name: tool
                    .pointer("/function/name")
                    .and_then(Value::as_str)
                    .unwrap_or("tool")
                    .to_string(),
                parameters: tool
                    .pointer("/function/parameters")
                    .cloned()
                    .unwrap_or_else(|| Value::Object(Map::new())),
            });
        }
        let rf = response_format?;
        match rf.get("type").and_then(Value::as_str) {
            Some("json_schema") => Some(Form::Json {
                schema: rf
                    .pointer("/json_schema/schema")
                    .cloned()
                    .unwrap_or_else(|| Value::Object(Map::new())),
            }),
            Some("json_object") => Some(Form::Json {
                schema: serde_json::json!({"type": "object"}),
            }),
            _ => None,
        }
    }

    /// The tool's name, for a tool call.
    pub(crate) fn tool_name(&self) -> Option<&str> {
        match self {
            Form::Tool { name, .. } => Some(name),
            Form::Json { .. } => None,
        }
    }

    fn schema(&self) -> &Value {
        match self {
            Form::Tool { parameters, .. } => parameters,
            Form::Json { schema } => schema,
        }
    }
}

/// A form's answer: its JSON text, cut into tokens.
#[derive(Debug, Clone)]
pub(crate) struct FormAnswer {
    pieces: Vec<String>,
}

impl FormAnswer {
    /// The answer to `form` in words of `prose`; `malformed` leaves out its last character.
    pub(crate) fn new(form: &Form, prose: &Prose, malformed: bool) -> FormAnswer {
        let mut words = 0;
        let mut text = sample(form.schema(), prose, &mut words, 0).to_string();
        if malformed {
            text.pop();
        }
        let chars: Vec<char> = text.chars().collect();
        FormAnswer {
            pieces: chars
                .chunks(CHARS_PER_TOKEN)
                .map(|c| c.iter().collect())
                .collect(),
        }
    }

    /// The text of answer tokens `from..from + n`.
    pub(crate) fn text(&self, from: u32, n: u32) -> String {
        (from..from.saturating_add(n))
            .map(|i| self.pieces.get(i as usize).map_or(" ", String::as_str))
            .collect()
    }
}

/// The `k`-th word of `prose`, without its spacing or punctuation.
fn word(prose: &Prose, k: &mut u32) -> String {
    let mut out = String::new();
    prose.push(*k, 1, &mut out);
    *k += 1;
    out.trim().trim_end_matches('.').to_lowercase()
}

/// A value that matches `schema` for the schemas tools and answers use.
fn sample(schema: &Value, prose: &Prose, k: &mut u32, depth: u32) -> Value {
    if depth > MAX_DEPTH {
        return Value::Null;
    }
    if let Some(c) = schema.get("const") {
        return c.clone();
    }
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(first) = schema
            .get(key)
            .and_then(Value::as_array)
            .and_then(|a| a.first())
        {
            return sample(first, prose, k, depth + 1);
        }
    }
    let ty = match schema.get("type") {
        Some(Value::Array(types)) => types.first().and_then(Value::as_str),
        Some(t) => t.as_str(),
        None if schema.get("properties").is_some() => Some("object"),
        None => None,
    };
    let least =
        |key: &str, otherwise: f64| schema.get(key).and_then(Value::as_f64).unwrap_or(otherwise);
    match ty {
        Some("object") => {
            let props = schema.get("properties").and_then(Value::as_object);
            Value::Object(
                props
                    .into_iter()
                    .flatten()
                    .map(|(name, s)| (name.clone(), sample(s, prose, k, depth + 1)))
                    .collect(),
            )
        }
        Some("array") => {
            let items = schema.get("items").cloned().unwrap_or(Value::Null);
            let n = least("minItems", 1.0).max(1.0) as usize;
            Value::Array(
                (0..n)
                    .map(|_| sample(&items, prose, k, depth + 1))
                    .collect(),
            )
        }
        Some("string") => {
            let min = least("minLength", 1.0).max(1.0) as usize;
            let mut s = word(prose, k);
            while s.chars().count() < min {
                s.push(' ');
                s.push_str(&word(prose, k));
            }
            Value::String(s)
        }
        Some("integer") => Value::from(least("minimum", 7.0).ceil() as i64),
        Some("number") => serde_json::json!(least("minimum", 1.5)),
        Some("boolean") => Value::Bool(true),
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn answer(form: &Form, malformed: bool) -> String {
        FormAnswer::new(form, &Prose::new(7), malformed).text(0, 200)
    }

    #[test]
    fn a_tool_call_matches_its_parameters_and_pads_with_spaces() {
        let tools = json!([
            {"type": "function", "function": {"name": "a", "parameters": {"type": "object"}}},
            {"type": "function", "function": {"name": "get_weather", "parameters": {
                "type": "object", "required": ["city", "days"],
                "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1},
                               "unit": {"enum": ["c", "f"]}}}}}
        ]);
        let choice = json!({"type": "function", "function": {"name": "get_weather"}});
        let form = Form::of(Some(&tools), Some(&choice), None).unwrap();
        assert_eq!(form.tool_name(), Some("get_weather"));
        let text = answer(&form, false);
        let a = FormAnswer::new(&form, &Prose::new(7), false);
        assert_eq!(a.text(0, 2).chars().count(), 2 * CHARS_PER_TOKEN);
        assert_eq!(a.text(199, 1), " ", "spaces after the value");
        assert_eq!(
            text,
            a.text(0, 120) + &a.text(120, 80),
            "any stretch on its own"
        );
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            (v["days"].clone(), v["unit"].clone()),
            (json!(1), json!("c"))
        );
        assert!(v["city"].as_str().is_some_and(|c| !c.is_empty()), "{v}");
        assert!(serde_json::from_str::<Value>(&answer(&form, true)).is_err());
        assert_eq!(Form::of(Some(&tools), Some(&json!("none")), None), None);
    }

    #[test]
    fn a_response_format_is_answered_in_json() {
        let rf = json!({"type": "json_schema", "json_schema": {"name": "x", "schema": {
            "type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}, "minItems": 2}}}}});
        let form = Form::of(None, None, Some(&rf)).unwrap();
        let v: Value = serde_json::from_str(&answer(&form, false)).unwrap();
        assert_eq!(v["tags"].as_array().map(Vec::len), Some(2));
        assert_eq!(Form::of(None, None, Some(&json!({"type": "text"}))), None);
        let object = Form::of(None, None, Some(&json!({"type": "json_object"}))).unwrap();
        assert_eq!(answer(&object, false).trim(), "{}");
    }
}
