// PostgreSQL migration 14 (./postgres-migrations.ts): the functions behind the rate-limit allowances of
// src/auth/limits-postgres.ts. Both run under the key's advisory lock (class 177874945, as migration 11's
// a2a_rate_take), so they interleave with every other take of the key as whole statements.
//
// a2a_rate_take_leased is a2a_rate_take that may also take up to p_extra more units, never more than 1/p_share of
// the room left after its own weight (so leases shrink to nothing as the window fills, and the last slots are taken
// one at a time). The leased units are one row at v_now + p_lease: they count from the take until p_lease after the
// last moment they can be spent, so no sliding window of the requests' real times holds more than the limit. It
// first gives back p_back units of an earlier lease (its rows at p_back_at) in the same statement.
// a2a_rate_give_back does only that: lease rows of that time are shrunk, or deleted when nothing is left of them (the
// delete trigger of migration 11 takes their weight off the running total). Units whose rows have left the window
// are given back as 0.
export const POSTGRES_RATE_ALLOWANCES = `
CREATE OR REPLACE FUNCTION a2a_rate_give_back_locked(p_credential TEXT, p_policy TEXT, p_at BIGINT, p_units BIGINT)
RETURNS BIGINT LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  v_row RECORD;
  v_left BIGINT := p_units;
  v_back BIGINT;
BEGIN
  IF p_units IS NULL OR p_units <= 0 THEN
    RETURN 0;
  END IF;
  -- Rows of one key at one time are interchangeable (they leave the window together): another gateway's lease at the
  -- same millisecond may give back into this one's row, so the units are taken from as many rows as it needs.
  FOR v_row IN SELECT e.ctid AS id, e.weight FROM a2a_rate_events e
      WHERE e.credential = p_credential AND e.policy = p_policy AND e.at_ms = p_at ORDER BY e.weight DESC FOR UPDATE LOOP
    EXIT WHEN v_left <= 0;
    v_back := LEAST(v_left, v_row.weight);
    IF v_back = v_row.weight THEN
      DELETE FROM a2a_rate_events e WHERE e.ctid = v_row.id;
    ELSE
      UPDATE a2a_rate_events e SET weight = e.weight - v_back WHERE e.ctid = v_row.id;
      UPDATE a2a_rate_windows w SET used = w.used - v_back WHERE w.credential = p_credential AND w.policy = p_policy;
    END IF;
    v_left := v_left - v_back;
  END LOOP;
  RETURN p_units - v_left;
END
$fn$;
CREATE OR REPLACE FUNCTION a2a_rate_give_back(p_lock INTEGER, p_credential TEXT, p_policy TEXT, p_at BIGINT, p_units BIGINT)
RETURNS BIGINT LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
  PERFORM pg_advisory_xact_lock(177874945, p_lock);
  RETURN a2a_rate_give_back_locked(p_credential, p_policy, p_at, p_units);
END
$fn$;
CREATE OR REPLACE FUNCTION a2a_rate_take_leased(p_lock INTEGER, p_credential TEXT, p_policy TEXT, p_now BIGINT, p_window BIGINT, p_max BIGINT,
  p_weight BIGINT, p_extra BIGINT, p_share BIGINT, p_lease BIGINT, p_back_at BIGINT, p_back BIGINT)
RETURNS TABLE (now_ms BIGINT, allowed BOOLEAN, used BIGINT, oldest BIGINT, freeing BIGINT, leased BIGINT, lease_at BIGINT)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  v_now BIGINT;
  v_used BIGINT;
  v_oldest BIGINT;
  v_freeing BIGINT;
  v_ok BOOLEAN;
  v_leased BIGINT := 0;
BEGIN
  PERFORM pg_advisory_xact_lock(177874945, p_lock);
  v_now := COALESCE(p_now, a2a_now_ms());
  PERFORM a2a_rate_give_back_locked(p_credential, p_policy, p_back_at, p_back);
  DELETE FROM a2a_rate_events e WHERE e.credential = p_credential AND e.policy = p_policy AND e.at_ms <= v_now - p_window;
  SELECT COALESCE(max(w.used), 0) INTO v_used FROM a2a_rate_windows w WHERE w.credential = p_credential AND w.policy = p_policy;
  SELECT min(e.at_ms) INTO v_oldest FROM a2a_rate_events e WHERE e.credential = p_credential AND e.policy = p_policy;
  v_ok := p_weight <= p_max - v_used;
  IF v_ok THEN
    INSERT INTO a2a_rate_events (credential, policy, at_ms, weight, expires_at) VALUES (p_credential, p_policy, v_now, p_weight, v_now + p_window);
    IF p_extra > 0 AND p_share > 0 THEN
      v_leased := GREATEST(0, LEAST(p_extra, (p_max - v_used - p_weight) / p_share));
    END IF;
    IF v_leased > 0 THEN
      INSERT INTO a2a_rate_events (credential, policy, at_ms, weight, expires_at)
        VALUES (p_credential, p_policy, v_now + p_lease, v_leased, v_now + p_lease + p_window);
    END IF;
    INSERT INTO a2a_rate_windows AS w (credential, policy, used) VALUES (p_credential, p_policy, p_weight + v_leased)
      ON CONFLICT (credential, policy) DO UPDATE SET used = w.used + EXCLUDED.used;
    v_used := v_used + p_weight + v_leased;
    v_oldest := LEAST(COALESCE(v_oldest, v_now), v_now);
  ELSIF p_weight <= p_max THEN
    SELECT c.at_ms INTO v_freeing FROM (
      SELECT e.at_ms, sum(e.weight) OVER (ORDER BY e.at_ms) AS run
        FROM a2a_rate_events e WHERE e.credential = p_credential AND e.policy = p_policy
    ) c WHERE c.run >= p_weight - (p_max - v_used) ORDER BY c.at_ms LIMIT 1;
  END IF;
  RETURN QUERY SELECT v_now, v_ok, v_used, v_oldest, v_freeing, v_leased, v_now + p_lease;
END
$fn$;
`;
