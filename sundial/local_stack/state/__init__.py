"""The emulator's DynamoDB tables kept in a directory, so that a restart or a crash loses no write."""
