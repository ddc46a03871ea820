"""generate stage: questions, answers and evidence/haystack/filler sessions from the images' ground truth."""
