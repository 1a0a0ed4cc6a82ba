"""The conversational retrieval benchmark: long two-person chats in English and German with
dated sessions and labelled questions (LoCoMo style), generated from a seed, and their
evaluation against search (does it find the evidence turn?)."""
