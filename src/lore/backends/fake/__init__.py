"""In-memory implementations of every port: no SQLite, no files. They hold the same
contract as the local backend (the suites in tests/contract run against both), so a test
of a feature or a channel can use them instead of a home directory."""
