// Bounded caches on Map and Set: their iteration order is insertion order, so the first key is the oldest (or, with
// lruGet moving a hit to the end, the least recently used) and the one to drop when an insert goes past the bound.

/** The value under `key`, moved to the end (most recently used) when present. */
export function lruGet<K, V>(map: Map<K, V>, key: K): V | undefined {
  const hit = map.get(key);
  if (hit !== undefined) {
    map.delete(key);
    map.set(key, hit);
  }
  return hit;
}

/** Sets `key` (at the end, even when it was there) and drops the oldest entries past `max`. */
export function boundedSet<K, V>(map: Map<K, V>, key: K, value: V, max: number): void {
  map.delete(key);
  map.set(key, value);
  while (map.size > max) map.delete(map.keys().next().value as K);
}

/** Adds `value` (at the end, even when it was there) and drops the oldest members past `max`. */
export function boundedAdd<T>(set: Set<T>, value: T, max: number): void {
  set.delete(value);
  set.add(value);
  while (set.size > max) set.delete(set.values().next().value as T);
}
