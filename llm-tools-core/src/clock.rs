//! This machine's clock, in milliseconds since the Unix epoch: the default of
//! [`Store::now_ms`](crate::store::Store::now_ms), which claims, leases and wake times are
//! written in (a store shared by machines, as PostgreSQL, reads its server's clock instead).

/// Milliseconds since the Unix epoch (0 for a clock set before it; the largest `u64` past it).
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
