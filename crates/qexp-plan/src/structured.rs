//! Tool calls and structured output: `[workload.tools]` (OpenAI `tools`
//! from a JSON file, with `tool_choice`) and `[workload.response_format]`
//! (a JSON Schema file, sent as `response_format` or only checked). Both
//! files are read and every schema is checked to be JSON Schema when the
//! plan loads, so that a bad schema stops the run before anything is sent.
//! [`Structured::parses`] then says of each answer whether it parsed: a
//! tool call whose arguments are JSON matching its tool's schema, or text
//! that is JSON matching the response schema.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use toml::Spanned;

/// `[workload.tools]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsSection {
    /// A JSON file holding the `tools` array (OpenAI's shape), relative to
    /// the plan's folder unless absolute.
    pub file: Spanned<String>,
    /// `tool_choice`: `"auto"` (default), `"required"`, `"none"`, or the
    /// name of one of the tools.
    #[serde(default)]
    pub choice: Option<Spanned<String>>,
}

/// `[workload.response_format]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResponseFormatSection {
    /// A JSON Schema file the answer must match, relative to the plan's
    /// folder unless absolute.
    pub schema: Spanned<String>,
    /// Send the schema as `response_format` (default); false only checks
    /// answers against it (the prompts must ask for it themselves).
    #[serde(default = "yes")]
    pub enforce: bool,
}

fn yes() -> bool {
    true
}

/// A compiled JSON Schema.
#[derive(Clone)]
pub struct Schema {
    /// The schema as written.
    pub value: Value,
    compiled: Arc<(boon::Schemas, boon::SchemaIndex)>,
}

impl fmt::Debug for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Schema({})", self.value)
    }
}

/// The deepest first cause of a validation error, in one line.
fn first_cause(e: &boon::ValidationError<'_, '_>) -> String {
    match e.causes.first() {
        Some(c) => first_cause(c),
        None => {
            let at = e.instance_location.to_string();
            let at = if at.is_empty() { "/".to_string() } else { at };
            format!("at {at}: {}", e.kind)
        }
    }
}

impl Schema {
    /// Compiles `value` (drafts 4 to 2020-12, 2020-12 when it names
    /// none), or says in one sentence why it is not JSON Schema.
    fn compile(value: Value) -> Result<Schema, String> {
        const LOC: &str = "qexp:schema.json";
        let mut compiler = boon::Compiler::new();
        let mut schemas = boon::Schemas::new();
        let not_schema = |e: boon::CompileError| match e {
            boon::CompileError::ValidationError { src, .. } => {
                format!("is not JSON Schema ({})", first_cause(&src))
            }
            other => format!("is not JSON Schema ({other})"),
        };
        compiler
            .add_resource(LOC, value.clone())
            .map_err(not_schema)?;
        let index = compiler.compile(LOC, &mut schemas).map_err(not_schema)?;
        Ok(Schema {
            value,
            compiled: Arc::new((schemas, index)),
        })
    }

    /// Whether `text` is JSON that matches the schema.
    pub fn matches_text(&self, text: &str) -> bool {
        let (schemas, index) = &*self.compiled;
        serde_json::from_str::<Value>(text).is_ok_and(|v| schemas.validate(&v, *index).is_ok())
    }

    /// Whether an answer's text is JSON matching the schema, alone or as
    /// the one Markdown code block the answer is (models asked for JSON in
    /// the prompt often fence it).
    pub fn matches_answer(&self, text: &str) -> bool {
        self.matches_text(unfenced(text))
    }
}

/// The inside of `text` when the whole of it is one fenced code block
/// (its info string, such as `json`, left out); else `text`.
fn unfenced(text: &str) -> &str {
    let t = text.trim();
    match t.strip_prefix("```").and_then(|r| r.strip_suffix("```")) {
        Some(inner) if !inner.contains("```") => {
            inner.split_once('\n').map_or(inner, |(_, body)| body)
        }
        _ => t,
    }
}

/// One tool of the `tools` file.
#[derive(Debug, Clone)]
pub struct Tool {
    /// `function.name`.
    pub name: String,
    /// `function.parameters` (an empty schema when absent: any JSON value).
    pub parameters: Schema,
}

/// `tool_choice`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolChoice {
    /// The model decides.
    Auto,
    /// The model must call a tool.
    Required,
    /// The model must not call a tool.
    None,
    /// The model must call this tool.
    Named(String),
}

impl ToolChoice {
    /// As the request body sends it.
    pub fn body(&self) -> Value {
        match self {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::Required => json!("required"),
            ToolChoice::None => json!("none"),
            ToolChoice::Named(n) => json!({"type": "function", "function": {"name": n}}),
        }
    }

    fn parse(text: &str, tools: &[Tool]) -> Result<ToolChoice, String> {
        Ok(match text {
            "auto" => ToolChoice::Auto,
            "required" => ToolChoice::Required,
            "none" => ToolChoice::None,
            name if tools.iter().any(|t| t.name == name) => ToolChoice::Named(name.to_string()),
            other => {
                return Err(format!(
                    "must be \"auto\", \"required\", \"none\" or the name of a tool in the file, not {other:?}"
                ))
            }
        })
    }
}

/// A tool call as the answer made it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// `function.name`.
    pub name: String,
    /// `function.arguments`, the text as streamed.
    pub arguments: String,
}

/// What the plan asks of answers' form: its tools and response schema,
/// read and compiled.
#[derive(Debug, Clone, Default)]
pub struct Structured {
    /// The tools file's array, as written (sent as `tools`).
    pub tools_value: Option<Value>,
    /// Its tools.
    pub tools: Vec<Tool>,
    /// `tool_choice` (None without tools).
    pub choice: Option<ToolChoice>,
    /// The response schema.
    pub response: Option<Schema>,
    /// Whether the response schema is sent as `response_format`.
    pub enforce: bool,
}

impl Structured {
    /// Whether the plan asks anything of answers' form.
    pub fn any(&self) -> bool {
        self.tools_value.is_some() || self.response.is_some()
    }

    /// The request body fields: `tools`, `tool_choice`, `response_format`.
    pub fn body_fields(&self) -> serde_json::Map<String, Value> {
        let mut m = serde_json::Map::new();
        if let Some(tools) = &self.tools_value {
            m.insert("tools".into(), tools.clone());
        }
        if let Some(choice) = &self.choice {
            m.insert("tool_choice".into(), choice.body());
        }
        if let Some(schema) = self.response.as_ref().filter(|_| self.enforce) {
            m.insert(
                "response_format".into(),
                json!({"type": "json_schema", "json_schema": {"name": "answer", "strict": true, "schema": schema.value}}),
            );
        }
        m
    }

    /// Whether an answer parsed: every tool call names a tool and its
    /// arguments are JSON matching the tool's parameters; without a tool
    /// call, the text is JSON matching the response schema. None when the
    /// plan asks nothing of this answer's form (no response schema, and a
    /// tool call was optional or forbidden and none came). Text may be
    /// fenced as one Markdown code block; tool arguments may not.
    pub fn parses(&self, text: &str, calls: &[ToolCall]) -> Option<bool> {
        if !calls.is_empty() {
            return Some(calls.iter().all(|c| self.call_parses(c)));
        }
        let must_call = matches!(
            self.choice,
            Some(ToolChoice::Required | ToolChoice::Named(_))
        );
        match &self.response {
            _ if must_call => Some(false),
            Some(schema) => Some(schema.matches_answer(text)),
            None => None,
        }
    }

    /// Whether one tool call is well formed for this plan: it names a tool
    /// of the file (the one `tool_choice` names, when it names one; none
    /// when it forbids calls), and its arguments are JSON matching that
    /// tool's parameters. Arguments left empty are the empty object, as a
    /// tool without parameters is called.
    fn call_parses(&self, c: &ToolCall) -> bool {
        let allowed = match &self.choice {
            Some(ToolChoice::None) => false,
            Some(ToolChoice::Named(name)) => &c.name == name,
            _ => true,
        };
        let arguments = if c.arguments.trim().is_empty() {
            "{}"
        } else {
            &c.arguments
        };
        allowed
            && self
                .tools
                .iter()
                .any(|t| t.name == c.name && t.parameters.matches_text(arguments))
    }
}

/// Reads a JSON file, or says why not in one sentence.
fn read_json(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{} is not JSON: {e}", path.display()))
}

/// The tools of a `tools` file's array.
fn tools_of(value: &Value, path: &Path) -> Result<Vec<Tool>, String> {
    let shown = path.display();
    let list = value
        .as_array()
        .filter(|l| !l.is_empty())
        .ok_or_else(|| format!("{shown} must hold a non-empty JSON array of tools"))?;
    let mut tools: Vec<Tool> = Vec::new();
    for (i, tool) in list.iter().enumerate() {
        let function = tool.get("function");
        let name = function
            .and_then(|f| f.get("name"))
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .ok_or_else(|| format!("{shown}: tool {i} has no function.name"))?;
        if tools.iter().any(|t| t.name == name) {
            return Err(format!("{shown}: two tools are named {name:?}"));
        }
        let parameters = function
            .and_then(|f| f.get("parameters"))
            .cloned()
            .unwrap_or_else(|| json!({}));
        let parameters = Schema::compile(parameters)
            .map_err(|e| format!("{shown}: tool {name:?}'s parameters {e}"))?;
        tools.push(Tool {
            name: name.to_string(),
            parameters,
        });
    }
    Ok(tools)
}

/// Where each loaded part's error points: the key's span and dotted name.
pub(crate) type At = (std::ops::Range<usize>, &'static str);

/// Reads and compiles the plan's tools and response schema (`plan_dir`
/// resolves relative paths); an error names the key it comes from.
pub(crate) fn load(
    tools: Option<&ToolsSection>,
    response: Option<&ResponseFormatSection>,
    plan_dir: &Path,
) -> Result<Structured, (At, String)> {
    let mut out = Structured::default();
    if let Some(t) = tools {
        let at = (t.file.span(), "workload.tools.file");
        let path = plan_dir.join(t.file.get_ref());
        let value = read_json(&path).map_err(|e| (at.clone(), e))?;
        out.tools = tools_of(&value, &path).map_err(|e| (at.clone(), e))?;
        out.tools_value = Some(value);
        out.choice = Some(match &t.choice {
            Some(c) => ToolChoice::parse(c.get_ref(), &out.tools)
                .map_err(|e| ((c.span(), "workload.tools.choice"), e))?,
            None => ToolChoice::Auto,
        });
    }
    if let Some(r) = response {
        let at = (r.schema.span(), "workload.response_format.schema");
        let path = plan_dir.join(r.schema.get_ref());
        let value = read_json(&path).map_err(|e| (at.clone(), e))?;
        out.response = Some(
            Schema::compile(value).map_err(|e| (at.clone(), format!("{} {e}", path.display())))?,
        );
        out.enforce = r.enforce;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(v: Value) -> Schema {
        Schema::compile(v).unwrap()
    }

    fn weather() -> Structured {
        let params = json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
        Structured {
            tools_value: Some(json!([])),
            tools: vec![Tool {
                name: "get_weather".into(),
                parameters: schema(params),
            }],
            choice: Some(ToolChoice::Required),
            response: None,
            enforce: true,
        }
    }

    fn call(name: &str, args: &str) -> ToolCall {
        ToolCall {
            name: name.into(),
            arguments: args.into(),
        }
    }

    #[test]
    fn a_tool_call_parses_when_its_arguments_match() {
        let s = weather();
        assert_eq!(
            s.parses("", &[call("get_weather", r#"{"city":"Oslo"}"#)]),
            Some(true)
        );
        assert_eq!(
            s.parses("", &[call("get_weather", r#"{"city":"Oslo""#)]),
            Some(false),
            "cut JSON"
        );
        assert_eq!(
            s.parses("", &[call("get_weather", r#"{"town":"Oslo"}"#)]),
            Some(false),
            "schema"
        );
        assert_eq!(
            s.parses("", &[call("get_time", r#"{"city":"Oslo"}"#)]),
            Some(false),
            "unknown tool"
        );
        assert_eq!(
            s.parses("It is sunny.", &[]),
            Some(false),
            "required, not called"
        );
        let named = Structured {
            choice: Some(ToolChoice::Named("get_time".into())),
            tools: vec![
                weather().tools.remove(0),
                Tool {
                    name: "get_time".into(),
                    parameters: schema(json!({})),
                },
            ],
            ..weather()
        };
        assert_eq!(
            named.parses("", &[call("get_weather", r#"{"city":"Oslo"}"#)]),
            Some(false),
            "another tool than the one named"
        );
        assert_eq!(
            named.parses("", &[call("get_time", "")]),
            Some(true),
            "no arguments: the empty object"
        );
        let none = Structured {
            choice: Some(ToolChoice::None),
            ..weather()
        };
        assert_eq!(
            none.parses("", &[call("get_weather", r#"{"city":"Oslo"}"#)]),
            Some(false),
            "a call where calls are forbidden"
        );
        let auto = Structured {
            choice: Some(ToolChoice::Auto),
            ..weather()
        };
        assert_eq!(
            auto.parses("It is sunny.", &[]),
            None,
            "optional, not called"
        );
    }

    #[test]
    fn text_parses_against_the_response_schema() {
        let s = Structured {
            response: Some(schema(
                json!({"type": "object", "required": ["age"], "properties": {"age": {"type": "integer"}}}),
            )),
            enforce: true,
            ..Structured::default()
        };
        assert_eq!(s.parses(" {\"age\": 3} ", &[]), Some(true));
        assert_eq!(s.parses("{\"age\": \"3\"}", &[]), Some(false));
        assert_eq!(s.parses("Sure! {\"age\": 3}", &[]), Some(false));
        assert_eq!(
            s.parses("```json\n{\"age\": 3}\n```", &[]),
            Some(true),
            "fenced"
        );
        assert_eq!(
            s.parses("```\n{\"age\": 3}\n```\nand ```x```", &[]),
            Some(false)
        );
        assert_eq!(s.parses("```json\n{\"age\": 3", &[]), Some(false), "cut");
        assert_eq!(
            s.body_fields()["response_format"]["json_schema"]["schema"]["required"],
            json!(["age"])
        );
        let asked = Structured {
            enforce: false,
            ..s
        };
        assert!(asked.body_fields().is_empty(), "only checked, not sent");
    }

    #[test]
    fn a_schema_that_is_not_json_schema_is_refused() {
        let e = Schema::compile(json!({"type": "objekt"})).unwrap_err();
        assert!(e.starts_with("is not JSON Schema"), "{e}");
        assert!(Schema::compile(json!({"minLength": -1})).is_err());
        assert!(
            Schema::compile(json!(true)).is_ok(),
            "a boolean schema is one"
        );
        let path = Path::new("tools.json");
        let tools =
            json!([{"type": "function", "function": {"name": "f", "parameters": {"type": 5}}}]);
        let e = tools_of(&tools, path).unwrap_err();
        assert!(
            e.starts_with("tools.json: tool \"f\"'s parameters is not JSON Schema"),
            "{e}"
        );
        assert!(tools_of(&json!([]), path).is_err());
        assert!(tools_of(&json!([{"function": {}}]), path).is_err());
    }

    #[test]
    fn tool_choice_names_a_tool() {
        let tools = weather().tools;
        assert_eq!(
            ToolChoice::parse("required", &tools),
            Ok(ToolChoice::Required)
        );
        assert_eq!(
            ToolChoice::parse("get_weather", &tools).map(|c| c.body()),
            Ok(json!({"type": "function", "function": {"name": "get_weather"}}))
        );
        assert!(ToolChoice::parse("get_time", &tools).is_err());
    }
}
