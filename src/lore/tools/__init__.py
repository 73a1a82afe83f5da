"""The owner's hands: file and shell tools, confined to a project and gated by trust levels."""
