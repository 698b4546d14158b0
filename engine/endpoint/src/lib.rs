//! A local OpenAI-compatible chat-completions server (llama.cpp's `llama-server`, Ollama,
//! vLLM…), the one way memdb's optional model stages reach a language or vision model: the node
//! extractor, the captioner, the memory-operation experts, the gate's judge (crate `memdb`) and
//! ATM-Bench's judge (crate `memdb-lab`).
//!
//! Invariants: nothing leaves the device — the base URL must be plain `http://` to a loopback
//! host (`127.0.0.1`, `[::1]`, `localhost`), checked when the client is made, before any
//! request; every call has a deadline (a stalled server is [`EndpointError::Transport`], not a
//! hung ingest); whatever the server answers is untrusted, so a reply that is not a
//! chat-completions object with a string `choices[0].message.content` is a typed error naming
//! the endpoint. What the content means is the caller's to validate.

#[cfg(feature = "http")]
use std::time::Duration;

#[cfg(feature = "http")]
use serde_json::{Value, json};

/// Why a call to a local model server failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EndpointError {
    /// The URL is not plain `http://`.
    #[error("{url}: only plain http:// to a local server")]
    NotHttp {
        /// The URL given.
        url: String,
    },
    /// The URL names a host other than the loopback interface.
    #[error(
        "{url}: model stages only talk to a loopback server (127.0.0.1, [::1], localhost); nothing leaves the device"
    )]
    NotLoopback {
        /// The URL given.
        url: String,
    },
    /// The request did not complete: connection refused, reset, or past the deadline.
    #[error("{url}: {message}")]
    Transport {
        /// The endpoint.
        url: String,
        /// What the HTTP client said.
        message: String,
    },
    /// The server answered with an HTTP error.
    #[error("{url}: HTTP {status}: {body}")]
    Status {
        /// The endpoint.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The start of the body.
        body: String,
    },
    /// The answer is not a chat completion.
    #[error("{url}: {why}")]
    Reply {
        /// The endpoint.
        url: String,
        /// What is wrong with it.
        why: String,
    },
}

/// The start of a text, for error messages.
pub fn snippet(text: &str) -> String {
    text.chars().take(200).collect()
}

/// A chat-completions endpoint on the loopback interface.
#[cfg(feature = "http")]
#[derive(Debug, Clone)]
pub struct LoopbackChat {
    url: String,
    agent: ureq::Agent,
}

#[cfg(feature = "http")]
impl LoopbackChat {
    /// A client of `<base_url>/v1/chat/completions`, each call bounded by `timeout`; refuses a
    /// base URL that is not `http://` to a loopback host.
    pub fn new(base_url: &str, timeout: Duration) -> Result<LoopbackChat, EndpointError> {
        let base = base_url.trim_end_matches('/');
        let host = base
            .strip_prefix("http://")
            .map(|rest| rest.split('/').next().unwrap_or(""))
            .ok_or_else(|| EndpointError::NotHttp {
                url: base_url.to_owned(),
            })?;
        let host_only = match host.rsplit_once(':') {
            Some((h, port)) if port.chars().all(|c| c.is_ascii_digit()) => h,
            _ => host,
        };
        if !matches!(host_only, "127.0.0.1" | "localhost" | "[::1]") {
            return Err(EndpointError::NotLoopback {
                url: base_url.to_owned(),
            });
        }
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .build()
            .into();
        Ok(LoopbackChat {
            url: format!("{base}/v1/chat/completions"),
            agent,
        })
    }

    /// The endpoint's full URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Posts `request` and returns `choices[0].message.content`.
    pub fn complete(&self, request: &Value) -> Result<String, EndpointError> {
        let transport = |e: ureq::Error| EndpointError::Transport {
            url: self.url.clone(),
            message: e.to_string(),
        };
        let mut response = self
            .agent
            .post(&self.url)
            .header("Content-Type", "application/json")
            .send(request.to_string())
            .map_err(transport)?;
        let status = response.status();
        let body = response.body_mut().read_to_string().map_err(transport)?;
        if !status.is_success() {
            return Err(EndpointError::Status {
                url: self.url.clone(),
                status: status.as_u16(),
                body: snippet(&body),
            });
        }
        let reply = |why: String| EndpointError::Reply {
            url: self.url.clone(),
            why,
        };
        let value: Value = serde_json::from_str(&body)
            .map_err(|e| reply(format!("reply is not JSON ({e}): {}", snippet(&body))))?;
        value
            .pointer("/choices/0/message/content")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| {
                reply(format!(
                    "reply has no choices[0].message.content: {}",
                    snippet(&body)
                ))
            })
    }
}

/// The chat request of one JSON-answering model stage (a memory-operation expert, the gate's
/// judge): its own model (or adapter), greedy, at most 512 tokens, a system and a user message, in JSON mode with the reply's schema (llama.cpp and
/// llama-cpp-python constrain decoding to it, others to a JSON object): a small model otherwise
/// answers with prose, code or another shape. The strict parse still checks every reply.
#[cfg(feature = "http")]
pub fn json_mode_request(model: &str, schema: Value, system: &str, user: &str) -> Value {
    json!({
        "model": model,
        "temperature": 0.0,
        "max_tokens": 512,
        "response_format": {"type": "json_object", "schema": schema},
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": user},
        ],
    })
}

/// A model's answer as one JSON value: the whole content, or the one code fence it is in.
#[cfg(feature = "http")]
pub fn json_reply(content: &str) -> std::result::Result<Value, String> {
    let trimmed = content.trim();
    let body = trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|rest| rest.strip_suffix("```"))
        .unwrap_or(trimmed)
        .trim();
    serde_json::from_str(body).map_err(|e| e.to_string())
}
