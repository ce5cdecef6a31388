//! Checked bindings by call key: the latest call's (compared field by field, without building a
//! key), then a bounded map of earlier ones. A stencil keeps one [`CallCache`].

use super::call::{ArgMeta, CallKey, CallOrigin};
use crate::arrays::array_info::ArrayInfo;
use crate::bounded_cache::BoundedCache;
use std::sync::{Arc, Mutex, MutexGuard};

/// Cached calls per stencil; the cache is emptied when full (calls with this many distinct
/// layouts are rare, and a miss only costs the checks).
pub const CALL_CACHE_CAPACITY: usize = 256;

/// The bindings (`V`, e.g. a bound call with its typed views) of a stencil's checked calls.
#[derive(Debug)]
pub struct CallCache<V> {
    /// The key and binding of the latest call that was looked up successfully or inserted.
    last: Mutex<Option<(CallKey, Arc<V>)>>,
    map: Mutex<BoundedCache<CallKey, Arc<V>>>,
}

impl<V> Default for CallCache<V> {
    fn default() -> Self {
        CallCache {
            last: Mutex::new(None),
            map: Mutex::new(BoundedCache::new(CALL_CACHE_CAPACITY)),
        }
    }
}

/// Locks a mutex; a panic while it was held leaves only a cache, which is still usable.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<V> CallCache<V> {
    /// The binding of the call `args`, `origin`, `domain` checked with (`validated`) or without
    /// the checks `validate_args=False` skips, if one is cached, and its key (built only when
    /// the latest call does not match, for [`CallCache::insert`] on a miss).
    #[inline]
    pub fn get(
        &self,
        args: &[(&ArrayInfo, &ArgMeta)],
        origin: &CallOrigin,
        domain: Option<&[usize]>,
        validated: bool,
    ) -> (Option<Arc<V>>, Option<CallKey>) {
        if let Some((_, b)) = lock(&self.last)
            .as_ref()
            .filter(|(k, _)| k.matches(args, origin, domain, validated))
        {
            return (Some(Arc::clone(b)), None);
        }
        let key = CallKey::new(args, origin, domain, validated);
        let found = lock(&self.map).get(&key).cloned();
        if let Some(b) = &found {
            *lock(&self.last) = Some((key.clone(), Arc::clone(b)));
        }
        (found, Some(key))
    }

    /// Caches `value` under `key` and makes it the latest call.
    pub fn insert(&self, key: CallKey, value: Arc<V>) {
        lock(&self.map).insert(key.clone(), Arc::clone(&value));
        *lock(&self.last) = Some((key, value));
    }

    /// Number of cached call layouts.
    pub fn len(&self) -> usize {
        lock(&self.map).len()
    }

    /// Whether no call is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binding::test_support::arr;

    #[test]
    fn hits_the_latest_call_then_the_map() {
        let cache: CallCache<u32> = CallCache::default();
        let (a, b) = (arr(&[4, 4, 4]), arr(&[5, 4, 4]));
        let m = ArgMeta::default();
        let o = CallOrigin::Default;
        let (hit, key) = cache.get(&[(&a, &m)], &o, None, true);
        assert!(hit.is_none());
        cache.insert(key.unwrap(), Arc::new(1));
        let (hit, key) = cache.get(&[(&a, &m)], &o, None, true);
        assert_eq!((hit.as_deref(), key), (Some(&1), None)); // the latest call, no key built
        let (_, key) = cache.get(&[(&b, &m)], &o, None, true);
        cache.insert(key.unwrap(), Arc::new(2));
        let (hit, key) = cache.get(&[(&a, &m)], &o, None, true);
        assert_eq!(hit.as_deref(), Some(&1)); // from the map
        assert!(key.is_some());
        assert_eq!(cache.len(), 2);
        // A binding made with checks skipped is not the validated call's, nor the reverse.
        let (hit, key) = cache.get(&[(&a, &m)], &o, None, false);
        assert!(hit.is_none());
        cache.insert(key.unwrap(), Arc::new(3));
        assert_eq!(
            cache.get(&[(&a, &m)], &o, None, false).0.as_deref(),
            Some(&3)
        );
        assert_eq!(
            cache.get(&[(&a, &m)], &o, None, true).0.as_deref(),
            Some(&1)
        );
    }
}
