"""The Dagster library of the platform: what the assets, sensors and the launcher share.

``partitions`` (the audiences), ``keys`` (asset keys and what each check guards),
``dream_step`` (one Dream partition as Dagster reports it, for the asset and the batch job),
``metadata`` (what a materialisation shows) and ``home`` (DAGSTER_HOME, the instance). Nothing
here builds a definition that reads the settings.
"""
