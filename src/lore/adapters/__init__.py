"""Lore's memory inside agent frameworks, one small module each, each needing its
framework installed (the `agents`, `langchain` and `pydantic-ai` extras):

- `lore.adapters.openai_agents.LoreSession`: the OpenAI Agents SDK's `Session`, its
  history kept in a Lore conversation, the memory block as instructions;
- `lore.adapters.langchain.LoreChatMessageHistory` and `LoreRetriever`: LangChain's chat
  message history and a retriever over `Memory.search`;
- `lore.adapters.pydantic_ai.LoreMessageHistory`: pydantic-ai's message history, loaded
  before a run and saved after it.

Nothing here is imported by `import lore`.
"""
