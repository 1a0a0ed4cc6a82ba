"""The one dynamic partitions definition: audiences, keyed ``instance/kind/key``.

Keys are :attr:`memory_platform.dreaming.partitions.Partition.partition_key` (characters
Dagster or its UI reject are percent-encoded there). The audience is the only dynamic
dimension; the date of a scheduled Dream is run config and a run tag, never a second
partition dimension (audiences x days would explode).
"""

from dagster import DynamicPartitionsDefinition

AUDIENCES = "audiences"

audiences = DynamicPartitionsDefinition(name=AUDIENCES)
