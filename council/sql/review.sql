-- proposals_awaiting_review --
-- Open proposals no review dispatch was created for yet, whose thread reviews
-- them automatically (docs/architecture.md §5): at once (auto, or a thread that
-- never set it), or once open for the thread's delay (delayed). A manual
-- thread's proposals are never reviewed by themselves. The setting in force is
-- the thread's latest row. Oldest first, at most :limit.
SELECT p.id, p.thread_id
FROM retraction_proposals p
LEFT JOIN LATERAL (
    SELECT s.review, s.delay_s FROM thread_review_settings s
    WHERE s.thread_id = p.thread_id
    ORDER BY s.created_at DESC, s.id DESC LIMIT 1) s ON true
WHERE p.status = 'open'
  AND NOT EXISTS (SELECT 1 FROM dispatches d WHERE d.proposal_id = p.id)
  AND coalesce(s.review, 'auto') <> 'manual'
  AND p.created_at <= now() - make_interval(secs => coalesce(s.delay_s, 0))
ORDER BY p.created_at, p.id
LIMIT :limit
