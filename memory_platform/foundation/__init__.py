"""The foundation: settings, errors, text rules, language, tracing, the feature list, secrets, the
database. Any module may use these."""
