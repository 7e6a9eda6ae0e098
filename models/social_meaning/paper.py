"""Values printed in Mühlenbernd (2026), Tables 2-4 (transcribed from the paper's text)."""

# (model, prompt): (spearman, ccc, rmse)
TABLE2 = {
    ("gpt", "MIN"): (0.856, 0.703, 0.811), ("gpt", "ALT"): (0.880, 0.812, 0.565),
    ("gpt", "KMA"): (0.829, 0.754, 0.601), ("gpt", "COM"): (0.832, 0.786, 0.547),
    ("claude", "MIN"): (0.849, 0.730, 0.766), ("claude", "ALT"): (0.847, 0.754, 0.724),
    ("claude", "KMA"): (0.920, 0.739, 0.701), ("claude", "COM"): (0.946, 0.804, 0.576),
    ("gemini", "MIN"): (0.910, 0.622, 1.262), ("gemini", "ALT"): (0.908, 0.576, 1.422),
    ("gemini", "KMA"): (0.923, 0.680, 1.066), ("gemini", "COM"): (0.932, 0.659, 1.125),
}
# (model, prompt): (cds_m, cds_i, cds)
TABLE3 = {
    ("gpt", "MIN"): (0.325, 0.460, 0.393), ("gpt", "ALT"): (0.303, 0.392, 0.348),
    ("gpt", "KMA"): (0.360, 0.444, 0.402), ("gpt", "COM"): (0.259, 0.349, 0.304),
    ("claude", "MIN"): (0.845, 0.231, 0.538), ("claude", "ALT"): (1.235, 0.205, 0.720),
    ("claude", "KMA"): (0.454, 0.167, 0.310), ("claude", "COM"): (0.395, 0.228, 0.312),
    ("gemini", "MIN"): (1.389, 1.572, 1.480), ("gemini", "ALT"): (1.717, 2.470, 2.094),
    ("gemini", "KMA"): (1.026, 0.671, 0.848), ("gemini", "COM"): (1.241, 1.434, 1.338),
}
# (model, prompt): (rmse_mean, rmse_individual)
TABLE4 = {
    ("gpt", "MIN"): (0.811, 1.542), ("gpt", "ALT"): (0.565, 1.429), ("gpt", "KMA"): (0.601, 1.441),
    ("gpt", "COM"): (0.547, 1.420), ("claude", "MIN"): (0.766, 1.521), ("claude", "ALT"): (0.724, 1.497),
    ("claude", "KMA"): (0.701, 1.489), ("claude", "COM"): (0.576, 1.433), ("gemini", "MIN"): (1.262, 1.822),
    ("gemini", "ALT"): (1.422, 1.937), ("gemini", "KMA"): (1.066, 1.691), ("gemini", "COM"): (1.125, 1.729),
}
#: the paper reports DAS = ISS = 1.0 for every model and prompt (Section 6)
DAS_ISS = 1.0
