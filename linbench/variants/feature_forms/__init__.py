"""Forms shared by every feature-map linear attention (cosine, cosformer, linear).

Each such variant is O_i = sum_j (fq_i . fk_j) fv_j, optionally divided by the row
normaliser sum_j fq_i . fk_j + eps, for features fq, fk, fv its own maths defines.
These modules compute that sum in three ways; the variants keep their own quadratic
reference, written straight from their definitions, to test all three against.
"""
