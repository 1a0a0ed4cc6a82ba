"""The one dynamic partitions definition: audiences, keyed ``instance/kind/key``.

Keys are :attr:`memory_platform.features.dreaming.partitions.Partition.partition_key` (characters
Dagster or its UI reject are percent-encoded there). The audience is the only dynamic
dimension; the date of a scheduled Dream is run config and a run tag, never a second
partition dimension (audiences x days would explode).
"""

from dagster import DagsterInstance, DynamicPartitionsDefinition

AUDIENCES = "audiences"

audiences = DynamicPartitionsDefinition(name=AUDIENCES)


def register_partitions(instance: DagsterInstance, keys: list[str]) -> None:
    """Add the audience partitions of ``keys`` that the instance does not know yet. Callers
    pass only keys the database knows
    (:func:`memory_platform.features.dreaming.targets.known_partitions`)."""
    missing = [key for key in keys if not instance.has_dynamic_partition(AUDIENCES, key)]
    if missing:
        instance.add_dynamic_partitions(AUDIENCES, missing)
