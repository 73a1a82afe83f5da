"""The core every feature stands on: the turn, the tool loop, context, commands, tools."""
