"""The turn: context builder, tool loop, events and slash commands."""
