
import pytest

from conftest import ROOT
from dsstar_cli.config import ConfigError, load_config


def test_configs_default_is_the_packaged_default():
    from dsstar_cli.config import packaged_default_text

    assert (ROOT / "configs" / "default.yaml").read_text() == packaged_default_text()


def test_defaults(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    config = load_config(env={}, cwd=tmp_path)
    assert config.max_rounds == 10 and config["model"] is None and config["analyzer.mode"] == "auto"
    assert config.sources["max_rounds"] == "default"


def test_lookup_order_and_overrides(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    user = tmp_path / "xdg" / "dsstar" / "config.yaml"
    user.parent.mkdir(parents=True)
    user.write_text("max_rounds: 7\nmodel: openai/user\n")
    assert load_config(env={}, cwd=tmp_path).max_rounds == 7  # user config dir

    (tmp_path / "dsstar.yaml").write_text("max_rounds: 5\n")
    config = load_config(env={}, cwd=tmp_path)
    assert config.max_rounds == 5 and config["model"] == "openai/user"  # merged key by key: the user's model stays
    assert config.sources["max_rounds"] == str(tmp_path / "dsstar.yaml") and config.sources["model"] == str(user)

    explicit = tmp_path / "other.yaml"
    explicit.write_text("max_rounds: 3\nroles:\n  coder:\n    model: anthropic/claude-x\n")
    config = load_config(explicit, env={"DSSTAR_MODEL": "gemini/g"}, cwd=tmp_path)
    assert config.max_rounds == 3 and config["model"] == "gemini/g" and config.sources["model"] == "env DSSTAR_MODEL"
    assert load_config(explicit, env={}, cwd=tmp_path)["model"] == "openai/user"  # --config merges on top too
    assert config.model_for("coder") == "anthropic/claude-x" and config.model_for("planner") == "gemini/g"

    config = load_config(explicit, overrides={"max_rounds": 20, "model": "openai/flag"},
                         env={"DSSTAR_MODEL": "gemini/g"}, cwd=tmp_path)
    assert config.max_rounds == 20 and config["model"] == "openai/flag"
    assert config.sources["model"] == "flag --model"


@pytest.mark.parametrize("text, message", [
    ("max_rounds: 0\n", "`max_rounds` must be between 1 and 1000"),
    ("max_rounds: 2.5\n", "`max_rounds` must be a whole number"),
    ("max_rounds: true\n", "`max_rounds` must be a whole number"),
    ("modle: openai/x\n", "unknown key `modle` (did you mean `model`?)"),
    ("roles:\n  coder:\n    modle: x\n", "unknown key `roles.coder.modle`"),
    ("analyzer:\n  mode: fast\n", "`analyzer.mode` must be one of auto, builtin, llm"),
    ("llm:\n  timeout_s: -1\n", "`llm.timeout_s` must be between"),
    ("- a list\n", "must be a mapping"),
    ("max_rounds: [\n", "not valid YAML at line"),
    ("max_rounds: null\n", "`max_rounds` must not be null"),
])
def test_bad_files_name_the_key(tmp_path, text, message):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config(path, env={}, cwd=tmp_path)
    assert message in str(err.value) and str(path) in str(err.value)


def test_empty_file_means_defaults(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("# nothing\n")
    assert load_config(path, env={}, cwd=tmp_path).max_rounds == 10


def test_floats_accepted_where_seconds_are_expected(tmp_path):
    config = load_config(overrides={"code_timeout_s": 2.5, "llm.timeout_s": 3}, env={}, cwd=tmp_path)
    assert config["code_timeout_s"] == 2.5 and config["llm.timeout_s"] == 3.0


def test_every_default_key_is_documented_by_a_comment():
    """Each key line (the per-role model lines excepted: one comment covers them) follows a comment."""
    lines = (ROOT / "configs" / "default.yaml").read_text().splitlines()
    for previous, line in zip(lines, lines[1:]):
        is_key = line.strip() and not line.strip().startswith("#") and ":" in line
        if is_key and not line.rstrip().endswith(":") and "{model:" not in line:
            assert previous.strip().startswith("#") or previous.strip().endswith(":"), f"undocumented: {line}"


def test_environment_sets_the_common_keys_between_files_and_flags(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    (tmp_path / "dsstar.yaml").write_text("max_rounds: 5\ncode_timeout_s: 30\n")
    env = {"DSSTAR_MAX_ROUNDS": "6", "DSSTAR_API_BASE": "http://127.0.0.1:1/v1", "DSSTAR_TIMEOUT": "90.5",
           "DSSTAR_MAX_COST": "2", "DSSTAR_LLM_TIMEOUT": "30", "DSSTAR_RUN_DIR": str(tmp_path / "r"),
           "DSSTAR_FOLLOW_LINKS": "true", "DSSTAR_CODE_TIMEOUT": ""}
    config = load_config(env=env, cwd=tmp_path)
    assert (config.max_rounds, config["api_base"], config["budget.timeout_s"], config["budget.max_cost_usd"],
            config["llm.timeout_s"], config["run_dir"], config["follow_links"]) == (
        6, "http://127.0.0.1:1/v1", 90.5, 2.0, 30.0, str(tmp_path / "r"), True)
    assert config.sources["max_rounds"] == "env DSSTAR_MAX_ROUNDS"
    assert config["code_timeout_s"] == 30  # An empty variable sets nothing.
    assert load_config(overrides={"max_rounds": 9}, env=env, cwd=tmp_path).max_rounds == 9  # Flags win.
    with pytest.raises(ConfigError, match="env DSSTAR_MAX_ROUNDS: `max_rounds` must be a whole number"):
        load_config(env={"DSSTAR_MAX_ROUNDS": "many"}, cwd=tmp_path)


def test_a_bad_flag_value_is_a_usage_error_not_a_config_one(tmp_path):
    from dsstar_cli.config import FlagValueError

    with pytest.raises(FlagValueError, match="^--max-rounds: `max_rounds` must be between") as err:
        load_config(overrides={"max_rounds": 0}, env={}, cwd=tmp_path)
    assert err.value.exit_code == 2


def test_the_documented_table_of_variables_is_every_key_and_only_them():
    """docs/configuration.md's table: one row per key, its variable DSSTAR_<KEY> (and the older short
    name where there is one), nothing else; the names never collide."""
    import re

    from dsstar_cli.config import ENV_SHORT_NAMES, default_values, env_name

    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(DSSTAR_\w+)`(?: \(or `(DSSTAR_\w+)`\))? \| `([\w.]+)` \|$", text, re.M)
    short = {key: name for name, key in ENV_SHORT_NAMES.items()}
    assert rows == [(env_name(key), short.get(key, ""), key) for key in default_values()]
    names = [env_name(key) for key in default_values()] + list(ENV_SHORT_NAMES)
    assert len(set(names)) == len(names)
