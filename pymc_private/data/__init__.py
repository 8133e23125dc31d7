"""Private data: its declaration, the one pass over the records, the ledgers it charges."""
