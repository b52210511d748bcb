//! Chat messages of a multi-turn conversation: what earlier turns said, sent
//! again before a request's own prompt; and, in a tool session, the tool
//! calls an answer made and the results qexp sent back.

use serde::{Deserialize, Serialize};

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The user's turn.
    User,
    /// The model's answer.
    Assistant,
    /// A tool's result, answering one of the assistant's tool calls.
    Tool,
}

/// One chat message, as sent in `messages`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Its author.
    pub role: Role,
    /// Its text.
    pub content: String,
    /// The assistant's tool calls (empty for other messages).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<SentToolCall>,
    /// The call a tool's result answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    /// A user or assistant message of plain text.
    pub fn text(role: Role, content: String) -> Message {
        Message {
            role,
            content,
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
}

/// A tool call as an assistant message carries it (OpenAI's shape).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SentToolCall {
    /// The call's id, which the tool's result names.
    pub id: String,
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The function called.
    pub function: SentFunction,
}

/// The function of a [`SentToolCall`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SentFunction {
    /// Its name.
    pub name: String,
    /// Its arguments, the text as the answer streamed it.
    pub arguments: String,
}
