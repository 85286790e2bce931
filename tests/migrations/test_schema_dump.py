"""The schema dump renders a view alike on PG 15 and PG 16, and still shows a real difference."""

from __future__ import annotations

from sqlalchemy import Engine, text

from tests.migrations.schema_dump import dump_schema, unqualify_single_relation

# What PG 15's pg_get_viewdef(oid, true) prints for a view over one relation (PG 16: unqualified).
PG15_ONE_RELATION = """ SELECT o.claim_id,
    o.outcome <> 'open'::text AS resolved,
        CASE
            WHEN o.outcome = 'o.open'::text THEN NULL::boolean
            ELSE o.claim_type = 'endorse'::text
        END AS was_right,
    o."position"
   FROM outcomes o
  WHERE o.claim_id IS NOT NULL;"""
PG16_ONE_RELATION = """ SELECT claim_id,
    outcome <> 'open'::text AS resolved,
        CASE
            WHEN outcome = 'o.open'::text THEN NULL::boolean
            ELSE claim_type = 'endorse'::text
        END AS was_right,
    "position"
   FROM outcomes o
  WHERE claim_id IS NOT NULL;"""


def test_a_one_relation_view_of_pg15_renders_as_pg16_does() -> None:
    # Given PG 15's rendering of a view whose top-level query reads one relation (aliased, or by name),
    # with a string literal that looks like a qualified column
    by_name = (
        " SELECT v.model,\n    count(*) FILTER (WHERE v.resolved) AS resolved\n"
        "   FROM public.v\n  GROUP BY v.model;"
    )
    # When it is normalised
    # Then the qualifiers are gone, the literal is kept, and the text is PG 16's
    assert unqualify_single_relation(PG15_ONE_RELATION) == PG16_ONE_RELATION
    assert unqualify_single_relation(by_name) == (
        " SELECT model,\n    count(*) FILTER (WHERE resolved) AS resolved\n"
        "   FROM public.v\n  GROUP BY model;"
    )


def test_the_normalisation_keeps_what_both_versions_render_alike() -> None:
    # Given views that PG 15 and PG 16 both qualify: a join, a comma join, a sub-select, a union,
    # and the CTE bodies before the top-level query
    join = (
        " SELECT c.id,\n    r.agent\n   FROM public.claims c\n"
        "     JOIN public.agent_runs r ON r.id = c.run_id;"
    )
    comma = " SELECT a.x\n   FROM public.a,\n    public.b;"
    subselect = (
        " SELECT t.a,\n    ( SELECT count(*) AS count\n           FROM public.t t2\n"
        "          WHERE t2.a = t.a) AS n\n   FROM public.t;"
    )
    union = " SELECT t.a\n   FROM public.t\nUNION ALL\n SELECT u.a\n   FROM public.u;"
    for definition in (join, comma, subselect, union):
        # When each is normalised
        # Then it is left exactly as it was
        assert unqualify_single_relation(definition) == definition
    cte = " WITH f AS (\n         SELECT c.id\n           FROM public.claims c\n        )\n"
    with_cte = cte + " SELECT f.id\n   FROM f;"
    assert unqualify_single_relation(with_cte) == (cte + " SELECT id\n   FROM f;")


def test_a_real_difference_in_a_view_still_shows() -> None:
    # Given the PG 16 rendering and a PG 15 rendering of a view that selects another column
    changed = PG15_ONE_RELATION.replace("o.claim_id,", "o.run_id,")
    # When the PG 15 text is normalised
    # Then it still differs from the PG 16 text, in that column only
    normalised = unqualify_single_relation(changed)
    assert normalised != PG16_ONE_RELATION
    assert normalised == PG16_ONE_RELATION.replace("claim_id,", "run_id,")


def test_the_dump_renders_one_relation_views_as_pg16_on_this_server(
    owner_engine: Engine, owner_db_url: str
) -> None:
    # Given views over one relation and over a join, created on the test server (PG 15 or 16)
    with owner_engine.begin() as conn:
        conn.execute(text("CREATE TABLE zz_t (a integer, b text)"))
        conn.execute(text("CREATE VIEW zz_one AS SELECT x.a, x.b FROM zz_t x WHERE x.b <> 'x.b'"))
        conn.execute(text("CREATE VIEW zz_join AS SELECT x.a, y.b FROM zz_t x JOIN zz_t y ON y.a = x.a"))
    # When the schema is dumped
    dump = dump_schema(owner_db_url)
    # Then both render as the PG 16 snapshot would have them
    assert (
        "CREATE VIEW public.zz_one AS\n SELECT a,\n    b\n   FROM public.zz_t x\n  WHERE b <> 'x.b'::text;"
    ) in dump
    assert (
        "CREATE VIEW public.zz_join AS\n SELECT x.a,\n    y.b\n   FROM public.zz_t x\n"
        "     JOIN public.zz_t y ON y.a = x.a;"
    ) in dump
