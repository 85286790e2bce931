# ruff: noqa
"""Build a council-debate-v1 file of *blind* cross-model councils from the real du-debate files:
per question, every agent's round-0 answer (no exposure) from one file per model. Answers are read
with Council's own du-debate parser and the same patterns as the import. Derived data, not kept
in the repository: the same script as real-debates-2026-12-04/build_blind_council.py, with its
paths given. Usage: build_blind_council.py FILES_DIR AGENTS_PER_MODEL > blind-N.jsonl, where
FILES_DIR holds the harness's files with "/" in their repository paths written as "_"."""

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))
from council.domain.debates import parse_file

D = sys.argv[1].rstrip("/") + "/experiments_linux_single_slurm_results_hpc_"
FILES = {
    "gsm": {
        (
            "meta-llama/Llama-3.2-3B-Instruct",
            "meta",
        ): "gsm_gsm_Llama-3.2-3B_persona_kantian+cosmic+renaissance_agents3_rounds3.json",
        (
            "mistralai/Mistral-7B-Instruct-v0.3",
            "mistral",
        ): "gsm_gsm_Mistral-7B-Instruct-v0.3_persona_kantian+deep-sea+expert_agents3_rounds3.json",
        (
            "Qwen/Qwen3-0.6B",
            "alibaba",
        ): "gsm_gsm_Qwen3-0.6B_persona_kantian+deep-sea+renaissance_agents3_rounds3.json",
        ("Qwen/Qwen3-14B", "alibaba"): "gsm_gsm_Qwen3-14B_persona_enigma+zen+deep-sea_agents3_rounds3.json",
        (
            "WeiboAI/VibeThinker-1.5B",
            "weibo",
        ): "gsm_gsm_VibeThinker-1.5B_persona_stand-up+drone+hermetic_agents3_rounds3.json",
    },
    "mmlu": {
        (
            "meta-llama/Llama-3.2-3B-Instruct",
            "meta",
        ): "mmlu_mmlu_Llama-3.2-3B_persona_kantian+cosmic+renaissance_agents3_rounds3.json",
        (
            "mistralai/Mistral-7B-Instruct-v0.3",
            "mistral",
        ): "mmlu_mmlu_Mistral-7B-Instruct-v0.3_persona_kantian+deep-sea+expert_agents3_rounds3.json",
        (
            "Qwen/Qwen3-0.6B",
            "alibaba",
        ): "mmlu_mmlu_Qwen3-0.6B_persona_kantian+deep-sea+renaissance_agents3_rounds3.json",
        (
            "Qwen/Qwen3-14B",
            "alibaba",
        ): "mmlu_mmlu_Qwen3-14B_persona_radical+enigma+zen+deep-sea+systems_agents5_rounds3.json",
        (
            "WeiboAI/VibeThinker-1.5B",
            "weibo",
        ): "mmlu_mmlu_VibeThinker-1.5B_persona_stand-up+drone+hermetic_agents3_rounds3.json",
    },
}
PATTERNS = HERE.parent / "real-debates-2026-12-04"
PATTERN = {
    "gsm": (PATTERNS / "gsm.pattern").read_text().strip(),
    "mmlu": (PATTERNS / "mmlu.pattern").read_text().strip(),
}
per_agent = int(sys.argv[2]) if len(sys.argv) > 2 else 3
out = []
for task, files in FILES.items():
    by_q = {}
    for (model, provider), f in files.items():
        for rec in parse_file(
            open(D + f, "rb").read(), "du-debate", answer_pattern=PATTERN[task], numeric=task == "gsm"
        ):
            by_q.setdefault(rec.question, {})[(model, provider)] = rec
    for qi, (q, recs) in enumerate(sorted(by_q.items())):
        if len(recs) < len(files):
            continue
        truth = {next(iter(r.truth)) for r in recs.values() if r.truth}
        assert len(truth) == 1, (q, truth)
        agents, turns = [], []
        for (model, provider), rec in recs.items():
            short = model.split("/")[1]
            for turn in [t for t in rec.turns if t.round == 0][:per_agent]:
                name = f"{short}-{turn.agent[-1]}"
                agents.append({"name": name, "model": model, "provider": provider})
                turns.append({"round": 0, "agent": name, "answer": turn.answer, "saw": []})
        out.append(
            {
                "id": f"{task}-{qi}",
                "question": q[:4000],
                "truth": truth.pop(),
                "agents": agents,
                "turns": turns,
                "tags": ["blind-council", task],
            }
        )
sys.stdout.write("".join(json.dumps(r) + "\n" for r in out))
print(len(out), "records", file=sys.stderr)
