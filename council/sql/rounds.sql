-- round_closed_versions --
-- Whether every run of a dispatch's round has ended, and then the node versions the round
-- claimed on or made (a revision carries no claim of its maker's; none while it is open):
-- what is decided before the next round is shown the round's stances, and what the last
-- round sends to the commit queue (a dispatch's runs are evaluated once a round). Asked
-- under the dispatch's advisory lock, as every run's end asks it (council_round_state_v1,
-- revision 0043), so two askers never both miss the other's end.
SELECT CAST(s ->> 'closed' AS boolean) AS closed,
       ARRAY(SELECT CAST(v AS uuid) FROM jsonb_array_elements_text(s -> 'versions') AS v) AS versions
FROM council_round_state_v1(CAST(:dispatch_id AS uuid), CAST(:round AS integer)) AS s
