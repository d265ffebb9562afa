"""Which test modules run one after the other in a single test worker (tests/conftest.py's
scheduler reads it; tests/test_shared_modules.py checks it is complete)."""

# The tests run in parallel worker processes (pytest-xdist: `-n auto --dist loadgroup` in
# pyproject.toml), one more than the cores. The tests of these modules run one after
# the other in a single worker: the Slurm tests share the session's one-node Slurm (its daemons
# and fixed ports) and the Ray tests each start a local Ray cluster, which two at once would
# fight over; the others make their subject once for the whole module (a module fixture).
# By module path, since xdist 3.8's own xdist_group marker has no effect under pytest 9.
SHARED_MODULES = {
    "tests/fleet/test_slurm.py": "clusters",
    "tests/fleet/test_slurm_executor.py": "clusters",
    "tests/fleet/test_ray.py": "clusters",
    "tests/cli/test_cli_fleet_executors.py": "clusters",
    "tests/cli/test_cli_compare_real.py": "compare-real",
    "tests/doctor/test_doctor_cpu.py": "doctor-cpu",
    "tests/test_layers.py": "layers",
    "tests/variants/test_gated_fla_interpreted.py": "fla-interpreted",
    "tests/variants/test_fla_serving_interpreted.py": "fla-interpreted",
    "tests/runner/test_triton_interpreted_runs.py": "triton-runs",
    "tests/variants/test_mamba2_mamba_ssm_interpreted.py": "mamba-ssm-interpreted",
    "tests/doctor/test_doctor_cuda.py": "doctor-cuda",
    "tests/history/test_cli_history.py": "history-cli",
    "tests/test_import_cycles.py": "import-cycles",
    "tests/variants/test_library_flashinfer.py": "library-flashinfer",
    "tests/variants/test_library_cudnn.py": "library-cudnn",
    "tests/variants/test_library_flash_qla.py": "library-flash-qla",
}
