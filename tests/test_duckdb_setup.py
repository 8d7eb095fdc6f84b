"""DuckDB's settings for generated scripts (sandbox/duckdb_setup.py): derived from the sandbox's
caps. tests/security/test_duckdb.py proves them applied in every tier."""

from dsstar_cli.sandbox.duckdb_setup import settings


def test_the_memory_limit_and_threads_follow_the_address_space_cap():
    default = settings(4096, "/run/work", 2048, cpus=16)
    assert default["memory_limit"] == "1728MB" and default["threads"] == 6     # one per 256 MB
    small = settings(1024, "/run/work", 64, cpus=16)
    assert small["memory_limit"] == "192MB" and small["threads"] == 1
    assert settings(256, "/run/work", 64, cpus=2)["memory_limit"] == "64MB"    # never below the floor
    assert settings(65536, "/run/work", 2048, cpus=2)["threads"] == 2          # never above the CPUs


def test_everything_duckdb_writes_stays_in_the_work_folder_and_nothing_is_fetched():
    found = settings(4096, "/run/work", 2048, cpus=2)
    for key in ("temp_directory", "home_directory", "extension_directory"):
        assert found[key].startswith("/run/work/.duckdb"), key
    assert found["max_temp_directory_size"] == "1000MB"
    assert settings(4096, "/run/work", 64, cpus=2)["max_temp_directory_size"] == "64MB"
    assert not (found["autoinstall_known_extensions"] or found["autoload_known_extensions"]
                or found["allow_community_extensions"])
