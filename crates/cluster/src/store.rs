//! The writes and reads of `nvo --etcd`: blocking calls, each on its own small runtime, each
//! bounded in time.

use std::time::Duration;

use etcd_client::{DeleteOptions, GetOptions};

use crate::session::Access;

/// How long one CLI call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// A failed call, in one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("etcd: {0}")]
pub struct StoreError(pub String);

fn block<T>(
    access: &Access,
    call: impl AsyncFnOnce(etcd_client::Client) -> Result<T, String>,
) -> Result<T, StoreError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| StoreError(format!("cannot start a runtime: {e}")))?;
    runtime.block_on(async {
        let work = async {
            let client = access.connect().await?;
            call(client).await
        };
        tokio::time::timeout(CALL_TIMEOUT, work)
            .await
            .map_err(|_| {
                StoreError(format!(
                    "no answer from {} within {CALL_TIMEOUT:?}",
                    access.endpoints.join(",")
                ))
            })?
            .map_err(StoreError)
    })
}

/// Puts `value` at `key`.
pub fn put(access: &Access, key: &str, value: Vec<u8>) -> Result<(), StoreError> {
    block(access, async |mut c| {
        c.put(key, value, None)
            .await
            .map(|_| ())
            .map_err(|e| format!("put {key}: {e}"))
    })
}

/// Deletes `key`; answers whether it existed.
pub fn delete(access: &Access, key: &str) -> Result<bool, StoreError> {
    block(access, async |mut c| {
        c.delete(key, None::<DeleteOptions>)
            .await
            .map(|r| r.deleted() > 0)
            .map_err(|e| format!("delete {key}: {e}"))
    })
}

/// Every (key, value) under `prefix`, in key order.
pub fn list(access: &Access, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
    block(access, async |mut c| {
        let read = c
            .get(prefix, Some(GetOptions::new().with_prefix()))
            .await
            .map_err(|e| format!("read {prefix}: {e}"))?;
        Ok(read
            .kvs()
            .iter()
            .map(|kv| {
                (
                    String::from_utf8_lossy(kv.key()).into_owned(),
                    kv.value().to_vec(),
                )
            })
            .collect())
    })
}
