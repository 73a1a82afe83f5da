"""Model providers behind one small interface (`lore.llm.base.Provider`)."""
