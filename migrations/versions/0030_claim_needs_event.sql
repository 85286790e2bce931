-- Every claim is written with its claim.added event, in the same transaction: checked at
-- commit (a deferred constraint trigger), so the event may come after the claim in the
-- transaction (an output's events are appended with its run's end), never be missing.
-- The partial index makes the check one probe a claim.
CREATE INDEX events_claim_added_idx ON events (subject_id) WHERE kind = 'claim.added';

CREATE FUNCTION council_claim_has_event_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM events WHERE kind = 'claim.added' AND subject_id = NEW.id::text) THEN
        RAISE EXCEPTION 'claim % has no claim.added event: a claim is written with its event', NEW.id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NULL;
END;
$$;

CREATE CONSTRAINT TRIGGER claims_have_their_event AFTER INSERT ON claims
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION council_claim_has_event_v1();
