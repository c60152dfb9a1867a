"""Writes the shipped profiles from the generators (run from the repository root after a format change).

    python profiles/make_profiles.py
"""

from pathlib import Path

from eidola.generators import all_to_all, gemv_allreduce

HERE = Path(__file__).resolve().parent

PROFILES = {
    "gemv-allreduce-4gpu": lambda: gemv_allreduce(gpus=4, workgroups=4, vector_bytes=65536, tile_ns=2000, reduce_ns=400,
                                                  mode="poll", interval_ns=100),
    "gemv-allreduce-8gpu": lambda: gemv_allreduce(gpus=8, workgroups=8, vector_bytes=262144, tile_ns=2000,
                                                  reduce_ns=400, mode="poll", interval_ns=100),
    "all-to-all-16gpu": lambda: all_to_all(gpus=16, nbytes=1048576, workgroups=4, mode="poll"),
}

if __name__ == "__main__":
    for name, make in PROFILES.items():
        make().save(HERE / f"{name}.yaml")
        print(f"wrote profiles/{name}.yaml")
