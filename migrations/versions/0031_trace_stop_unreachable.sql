-- An agent-CLI call stopped because Council's provider proxy could not reach the provider
-- (the proxy answers 502 and the attempt ends at once; the CLIs would retry for minutes).
ALTER TABLE run_traces DROP CONSTRAINT run_traces_stopped_check;
ALTER TABLE run_traces ADD CONSTRAINT run_traces_stopped_check
    CHECK (stopped IN ('deadline', 'turn limit', 'authentication refused', 'provider unreachable'));
