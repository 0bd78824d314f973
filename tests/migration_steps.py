"""How the migration tests step the schema with Django's own executor: back to the state a
migration starts from (to write old-shape rows through that state's models), then forward to the
newest, which runs the migration under test on those rows. Tests using it need
`django_db(transaction=True, serialized_rollback=True)`: the schema changes under them."""

from __future__ import annotations

from django.apps.registry import Apps
from django.db import connection
from django.db.migrations.executor import MigrationExecutor


def migrate(targets: list[tuple[str, str]]) -> Apps:
    """Migrate to `targets` (forward or back); the models as they were there."""
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def migrate_to_latest() -> None:
    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
