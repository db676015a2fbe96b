"""Replay the full preset's training phase on two workers from measured run times: the schedule before the shared
tokenizer and word2vec on the runs' workers (the first run alone on two threads, then the pool, then word2vec two at
a time in the probe phase) against the one after (a few seconds of tokenizer, then the pool, word2vec at its end).

    python benchmarks/schedule_replay.py

The run times are `benchmarks/results/experiments-cost-20261127.json`'s (one thread each, two side by side); the
word2vec seconds are those the word2vec cache recorded in a call of the same preset that day (its `.json` files):
the tuned one (20 epochs) at seeds 0-2, then the matched one (1 epoch). A replay, not a timing: it leaves out each
run's start-up and the machine's drift.
"""

import heapq
import json
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "experiments-cost-20261127.json"
WORD2VEC_SECONDS = [67.2, 66.1, 55.2, 4.3, 4.3, 4.0]
FIRST_RUN_ALONE_SECONDS = 194  # the first run of that call, on two threads while nothing else ran
TOKENIZER_SECONDS = 10  # training the tokenizer and caching the sequences it cuts (a few seconds), rounded up


def makespan(tasks, start=(0.0, 0.0)) -> float:
    """When the last of `tasks` (seconds, taken in order by whichever worker is free first) ends."""
    free = list(start)
    heapq.heapify(free)
    end = 0.0
    for seconds in tasks:
        begin = heapq.heappop(free)
        heapq.heappush(free, begin + seconds)
        end = max(end, begin + seconds)
    return end


def main() -> dict:
    from hf_minattn.experiments.training import VARIANTS, side_by_side_order

    runs = json.loads(RESULTS.read_text())["run_seconds"]
    order = side_by_side_order([(seed, v) for seed in range(3) for v in VARIANTS if v.trained])  # the pool's order
    seconds = [runs[v.name][str(seed)] for seed, v in order]
    # Seed 0's full run is the one that trained alone on two threads; on one thread it takes what seeds 1-2's did.
    full_one_thread = (runs["full"]["1"] + runs["full"]["2"]) / 2
    before_training = makespan(seconds[1:], (FIRST_RUN_ALONE_SECONDS,) * 2)
    before_word2vec = makespan(WORD2VEC_SECONDS)
    after = makespan([full_one_thread, *seconds[1:], *WORD2VEC_SECONDS], (TOKENIZER_SECONDS,) * 2)
    before = before_training + before_word2vec
    result = {"before": {"training_minutes": round(before_training / 60, 1),
                         "word2vec_minutes": round(before_word2vec / 60, 1), "minutes": round(before / 60, 1)},
              "after_minutes": round(after / 60, 1), "saved_minutes": round((before - after) / 60, 1)}
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
