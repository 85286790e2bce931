-- Council ledger, revision 0010: an outside agent's exposures say how they arrived (docs/architecture.md §3 and §7).
--
-- `council mcp` records every stance it serves to a run as that run's exposure,
-- in the transaction that answers the read. Its channel names the tool that
-- served it, so observation question 4 ("did it see another's conclusion
-- before forming its own?") can say it arrived over MCP and through which
-- read. The set stays closed (council.domain.vocabulary.EXPOSURE_CHANNELS and
-- MCP_EXPOSURE_CHANNELS): a new tool that serves stances adds its channel in a
-- migration. Replacing a CHECK validates the existing rows, which all hold one
-- of the older values.
ALTER TABLE run_exposures
    DROP CONSTRAINT run_exposures_channel_check,
    ADD CONSTRAINT run_exposures_channel_check CHECK (channel IN (
        'briefing', 'previous_round', 'explicit', 'mcp:reentry_packet', 'mcp:node_status'));
