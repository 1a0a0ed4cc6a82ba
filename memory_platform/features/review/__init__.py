"""People in the loop: the review queues (pending assertions, open conflicts, Wiki drafts
for the audiences a reviewer may see, with their evidence) and the decisions a person takes
on them. Every decision goes through ``consolidation.lifecycle`` (reviewer kind ``human``),
so review rows are appended, human decisions win, and projections follow through the
outbox."""
