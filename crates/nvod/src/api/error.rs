//! Error answers and the extractors that produce them.
//!
//! Every error, including the ones axum would answer with plain text (a body that is not JSON,
//! too large, a path that matches nothing, a method the path does not take), is answered as
//! `{"error": "<one line>"}` with a 4xx/5xx status.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path, Request};
use axum::http::request::Parts;
use axum::http::{Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::de::DeserializeOwned;

use crate::control::{Failure, Kind};

/// Largest request body nvod reads; the largest real request (a network with a full flood
/// list) is well under it.
pub const MAX_BODY: usize = 64 * 1024;

/// An error answer.
#[derive(Debug)]
pub struct ApiFailure {
    status: StatusCode,
    message: String,
}

impl ApiFailure {
    /// An answer with this status and message.
    pub fn new(status: StatusCode, message: impl Into<String>) -> ApiFailure {
        ApiFailure {
            status,
            message: message.into(),
        }
    }
}

impl From<Failure> for ApiFailure {
    fn from(f: Failure) -> ApiFailure {
        let status = match f.kind {
            Kind::BadRequest => StatusCode::BAD_REQUEST,
            Kind::NotFound => StatusCode::NOT_FOUND,
            Kind::Conflict => StatusCode::CONFLICT,
            Kind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            Kind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        };
        ApiFailure::new(status, f.message)
    }
}

impl IntoResponse for ApiFailure {
    fn into_response(self) -> Response {
        log::debug!("request failed ({}): {}", self.status, self.message);
        let body = nvo_api::ApiError {
            error: self.message,
        };
        (self.status, Json(body)).into_response()
    }
}

/// A JSON request body: an object (anything else is refused before decoding), decoded with
/// the API's strict types (unknown fields refused); any failure is a JSON error answer naming
/// what is wrong.
#[derive(Debug)]
pub struct Body<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for Body<T> {
    type Rejection = ApiFailure;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(req, state).await.map_err(|e| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiFailure::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("request body is larger than {MAX_BODY} bytes; send less"),
                )
            } else {
                ApiFailure::new(
                    e.status(),
                    format!("cannot read the request body: {}", e.body_text()),
                )
            }
        })?;
        if bytes.is_empty() {
            return Err(ApiFailure::new(
                StatusCode::BAD_REQUEST,
                "the request has no body; send a JSON object (docs/openapi.yaml shows its fields)",
            ));
        }
        // Every documented body is an object; serde would also fill a struct from an array of
        // its fields in order (`[6, 1400, false]`), which no client means.
        let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
        let json = || serde_json::from_slice::<serde::de::IgnoredAny>(&bytes).is_ok();
        if first != Some(&b'{') && json() {
            let got = match first {
                Some(b'[') => "an array",
                Some(b'"') => "a string",
                Some(b'n') => "null",
                Some(b't' | b'f') => "a boolean",
                _ => "a number",
            };
            return Err(ApiFailure::new(
                StatusCode::BAD_REQUEST,
                format!(
                    "invalid request body: {got} where a JSON object is expected; \
                     docs/openapi.yaml shows its fields"
                ),
            ));
        }
        serde_json::from_slice(&bytes).map(Body).map_err(|e| {
            ApiFailure::new(
                StatusCode::BAD_REQUEST,
                format!("invalid request body: {e}; docs/openapi.yaml shows the expected fields"),
            )
        })
    }
}

/// Path parameters, with a JSON error answer when they do not decode.
#[derive(Debug)]
pub struct Params<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for Params<T> {
    type Rejection = ApiFailure;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Path::<T>::from_request_parts(parts, state)
            .await
            .map(|Path(t)| Params(t))
            .map_err(|e| {
                ApiFailure::new(
                    StatusCode::BAD_REQUEST,
                    format!("bad path: {}", e.body_text()),
                )
            })
    }
}

/// The answer for a path nvod does not serve.
pub async fn no_route(method: Method, uri: Uri) -> ApiFailure {
    ApiFailure::new(
        StatusCode::NOT_FOUND,
        format!("no such API path: {method} {uri}; docs/openapi.yaml lists the paths"),
    )
}

/// The answer for a method a path does not take.
pub async fn no_method(method: Method, uri: Uri) -> ApiFailure {
    ApiFailure::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("{uri} does not take {method}; docs/openapi.yaml lists the methods of each path"),
    )
}
