"""Study models: one module per seed paper. They import pragmodels; pragmodels never imports them."""
