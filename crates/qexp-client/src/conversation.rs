//! Chat messages of a multi-turn conversation: what earlier turns said, sent
//! again before a request's own prompt.

use serde::{Deserialize, Serialize};

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The user's turn.
    User,
    /// The model's answer.
    Assistant,
}

/// One chat message, as sent in `messages`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Its author.
    pub role: Role,
    /// Its text.
    pub content: String,
}
