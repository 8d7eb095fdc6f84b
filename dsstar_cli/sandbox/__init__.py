"""Running generated code away from the user's data and secrets."""

from dsstar_cli.sandbox.execution import Execution, clean_environment
from dsstar_cli.sandbox.executor import Executor
from dsstar_cli.sandbox.integrity import snapshot_folder

__all__ = ["Execution", "Executor", "clean_environment", "snapshot_folder"]
