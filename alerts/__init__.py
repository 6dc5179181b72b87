"""Alert records from breach episodes, and the notifiers that deliver them."""
