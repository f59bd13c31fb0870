"""Every jaxon.random sampler, for every dtype it accepts, against JAX 0.10.2's numbers.

The golden values are the first draws for PRNGKey(7), recorded once from JAX 0.10.2 (jax
and jaxlib 0.10.2 on CPU, `np.asarray(sampler(key, ...))`) with `jax_threefry_partitionable`
on (the default) and off, for int8/16/32, uint8/16/32, float16, bfloat16 and float32 (bool
where a sampler accepts it). They must match bit for bit: a sampler that converts, clips
or rounds differently for one dtype (randint of uint8 once did) fails here. Each sampler
also gives the same draws for the typed key of the same data.
"""
from __future__ import annotations

import numpy as np
import pytest

import jaxon.numpy as jnp
from jaxon import random
from tests.conftest import flag_set

KEY = random.PRNGKey(7)


@pytest.fixture(params=[True, False], ids=["partitionable", "original"])
def layout(request):
  with flag_set("jax_threefry_partitionable", request.param):
    yield request.param


F = ("float16", "bfloat16", "float32")
I = ("int8", "int16", "int32", "uint8", "uint16", "uint32")
P5 = (0.1, 0.2, 0.3, 0.2, 0.2)

# sampler -> (the dtypes it accepts, its draw from a key for one of them)
CASES = {
    "bits": (("uint8", "uint16", "uint32"), lambda k, d: random.bits(k, (5,), d)),
    "uniform": (F, lambda k, d: random.uniform(k, (5,), d, -3, 5)),
    "normal": (F, lambda k, d: random.normal(k, (5,), d)),
    "truncated_normal": (F, lambda k, d: random.truncated_normal(k, -1, 2, (5,), d)),
    "bernoulli": (F, lambda k, d: random.bernoulli(k, jnp.asarray(0.3, d), (8,))),
    "exponential": (F, lambda k, d: random.exponential(k, (5,), d)),
    "laplace": (F, lambda k, d: random.laplace(k, (5,), d)),
    "logistic": (F, lambda k, d: random.logistic(k, (5,), d)),
    "cauchy": (F, lambda k, d: random.cauchy(k, (5,), d)),
    "maxwell": (F, lambda k, d: random.maxwell(k, (5,), d)),
    "double_sided_maxwell": (F, lambda k, d: random.double_sided_maxwell(k, 0.5, 2.0, (5,), d)),
    "gumbel_low": (F, lambda k, d: random.gumbel(k, (5,), d, mode="low")),
    "gumbel_high": (F, lambda k, d: random.gumbel(k, (5,), d, mode="high")),
    "gumbel_highest": (F, lambda k, d: random.gumbel(k, (5,), d, mode="highest")),
    "lognormal": (F, lambda k, d: random.lognormal(k, 0.5, (5,), d)),
    "pareto": (F, lambda k, d: random.pareto(k, 3.0, (5,), d)),
    "rayleigh": (F, lambda k, d: random.rayleigh(k, 2.0, (5,), d)),
    "triangular": (F, lambda k, d: random.triangular(k, 0.0, 0.3, 1.0, (5,), d)),
    "wald": (F, lambda k, d: random.wald(k, 1.5, (5,), d)),
    "weibull_min": (F, lambda k, d: random.weibull_min(k, 1.0, 2.0, (5,), d)),
    "gamma": (F, lambda k, d: random.gamma(k, jnp.array([2.5, 0.3], d), (2,), d)),
    "loggamma": (F, lambda k, d: random.loggamma(k, 0.3, (3,), d)),
    "beta": (F, lambda k, d: random.beta(k, 2.0, 3.0, (3,), d)),
    "dirichlet": (F, lambda k, d: random.dirichlet(k, jnp.array([1.0, 2.0, 3.0], d), (), d)),
    "t": (F, lambda k, d: random.t(k, 4.0, (3,), d)),
    "chisquare": (F, lambda k, d: random.chisquare(k, 3.0, (3,), d)),
    "f": (F, lambda k, d: random.f(k, 3.0, 5.0, (3,), d)),
    "generalized_normal": (F, lambda k, d: random.generalized_normal(k, 1.5, (3,), d)),
    "ball": (F, lambda k, d: random.ball(k, 3, 2, (), d)),
    "binomial": (F, lambda k, d: random.binomial(k, jnp.array([10.0, 100.0], d),
                                                 jnp.array([0.3, 0.4], d), (2,), d)),
    "multinomial": (F, lambda k, d: random.multinomial(k, 10.0, jnp.array([0.2, 0.3, 0.5], d),
                                                       dtype=d)),
    "categorical": (F, lambda k, d: random.categorical(k, jnp.array([0.1, 0.5, -0.3], d),
                                                       shape=(6,))),
    "choice_p": (F, lambda k, d: random.choice(k, 5, (4,), p=jnp.array(P5, d))),
    "choice_p_norep": (F, lambda k, d: random.choice(k, 5, (3,), replace=False,
                                                     p=jnp.array(P5, d))),
    "orthogonal": (("float32",), lambda k, d: random.orthogonal(k, 2, (), d)),
    "multivariate_normal": (("float32",), lambda k, d: random.multivariate_normal(
        k, jnp.zeros(2, d), jnp.eye(2, dtype=d), (2,), d)),
    "randint": (I, lambda k, d: random.randint(k, (6,), 0, 100, d)),
    "randint_wide": (I, lambda k, d: random.randint(k, (6,), -1000, 100000, d)),
    "rademacher": (I + F, lambda k, d: random.rademacher(k, (6,), d)),
    "geometric": (I, lambda k, d: random.geometric(k, 0.3, (6,), d)),
    "poisson": (I, lambda k, d: random.poisson(k, jnp.array([3.0, 30.0]), (2,), d)),
    "permutation": (I, lambda k, d: random.permutation(k, jnp.arange(6, dtype=d))),
    "choice": (I, lambda k, d: random.choice(k, jnp.arange(10, dtype=d), (4,))),
}


# (sampler, dtype) -> (result dtype, result shape, JAX's first draws with the partitionable
# layout, with the original layout)
GOLDEN = {
    ("bits", "uint8"): ("uint8", (5,), [11, 0, 170], [191, 40, 160]),
    ("bits", "uint16"): ("uint16", (5,), [10507, 32256, 10666], [38825, 14744, 55624]),
    ("bits", "uint32"): ("uint32", (5,), [2895194379, 4185947648, 1300703658],
        [276534068, 861967409, 2793701230]),
    ("uniform", "float16"): ("float16", (5,), [-1.719, 0.9375, -1.703], [1.734, -1.203, 3.79]),
    ("uniform", "bfloat16"): ("bfloat16", (5,), [-2.69, -3.0, 2.31], [2.94, -1.75, 2.0]),
    ("uniform", "float32"): ("float32", (5,), [2.3927193, 4.796935, -0.57725143],
        [-2.4849157, -1.3944607, 2.2036734]),
    ("normal", "float16"): ("float16", (5,), [-0.9927, -0.01897, -0.9844], [0.2329, -0.756, 1.031]),
    ("normal", "bfloat16"): ("bfloat16", (5,), [-1.734, -2.89, 0.428], [0.656, -1.0, 0.322]),
    ("normal", "float32"): ("float32", (5,), [0.45123515, 1.9534509, -0.51623946],
        [-1.5189658, -0.83915037, 0.38656056]),
    ("truncated_normal", "float16"): ("float16", (5,), [-0.554, 0.1548, -0.5493],
        [0.3667, -0.4058, 1.05]),
    ("truncated_normal", "bfloat16"): ("bfloat16", (5,), [-0.88, -0.996, 0.527],
        [0.73, -0.562, 0.44]),
    ("truncated_normal", "float32"): ("float32", (5,), [0.55473375, 1.7111288, -0.23639946],
        [-0.80170804, -0.45949057, 0.49902076]),
    ("bernoulli", "float16"): ("bool", (8,), [1, 0, 1, 1, 0, 0, 1, 0], [0, 1, 0, 1, 0, 0, 1, 1]),
    ("bernoulli", "bfloat16"): ("bool", (8,), [1, 1, 0, 1, 0, 0, 0, 0], [0, 1, 0, 1, 0, 0, 1, 0]),
    ("bernoulli", "float32"): ("bool", (8,), [0, 0, 0, 0, 0, 0, 0, 0], [1, 0, 0, 1, 0, 0, 0, 0]),
    ("exponential", "float16"): ("float16", (5,), [0.1746, 0.6777, 0.1769], [0.896, 0.2544, 1.888]),
    ("exponential", "bfloat16"): ("bfloat16", (5,), [0.0398, 0.0, 1.09], [1.36, 0.17, 0.98]),
    ("exponential", "float32"): ("float32", (5,), [1.1211338, 3.673671, 0.36074546],
        [0.06655178, 0.22400944, 1.051135]),
    ("laplace", "float16"): ("float16", (5,), [1.137, 0.01525, 1.125], [-0.2035, 0.7993, -1.196]),
    ("laplace", "bfloat16"): ("bfloat16", (5,), [2.5, 5.53, -0.404], [-0.67, 1.15, -0.293]),
    ("laplace", "float32"): ("float32", (5,), [-0.42798662, -2.980525, 0.5013916],
        [2.0497186, 0.91283447, -0.35798782]),
    ("logistic", "float16"): ("float16", (5,), [-1.657, -0.03125, -1.643], [0.3716, -1.238, 1.724]),
    ("logistic", "bfloat16"): ("bfloat16", (5,), [-3.2, -87.5, 0.684], [1.06, -1.69, 0.508]),
    ("logistic", "float32"): ("float32", (5,), [0.726742, 3.6479602, -0.8337934],
        [-2.6763146, -1.3819724, 0.6210582]),
    ("cauchy", "float16"): ("float16", (5,), [-1.803, -0.02301, -1.778], [0.298, -1.168, 1.939]),
    ("cauchy", "bfloat16"): ("bfloat16", (5,), [-6.66, -41.8, 0.582], [0.977, -1.766, 0.428]),
    ("cauchy", "float32"): ("float32", (5,), [0.6088751, 12.513639, -0.71298087],
        [-4.8761935, -1.3701037, 0.5113441]),
    ("maxwell", "float16"): ("float16", (5,), [1.397, 0.7275, 2.035], [2.877, 0.638, 2.434]),
    ("maxwell", "bfloat16"): ("bfloat16", (5,), [3.4, 0.906, 0.463], [0.523, 0.918, 3.03]),
    ("maxwell", "float32"): ("float32", (5,), [2.0702868, 0.7144703, 1.4999796],
        [2.0064096, 1.0640831, 2.220427]),
    ("double_sided_maxwell", "float16"): ("float16", (5,), [-5.223, -4.98, 4.75],
        [-4.184, 3.088, 3.371]),
    ("double_sided_maxwell", "bfloat16"): ("bfloat16", (5,), [-2.67, -2.08, 2.17],
        [-3.66, 6.16, 2.12]),
    ("double_sided_maxwell", "float32"): ("float32", (5,), [-1.977191, -4.6701055, 3.2603445],
        [-3.65198, 2.5038455, 4.044534]),
    ("gumbel_low", "float16"): ("float16", (5,), [-0.6055, 0.344, -0.5986],
        [0.6455, -0.401, 1.807]),
    ("gumbel_low", "bfloat16"): ("bfloat16", (5,), [-1.18, -4.47, 0.89], [1.21, -0.62, 0.754]),
    ("gumbel_low", "float32"): ("float32", (5,), [0.9304105, 3.6608431, -0.17776018],
        [-1.0090034, -0.4737353, 0.8437916]),
    ("gumbel_high", "float16"): ("float16", (5,), [1.74, 0.3882, 1.727], [0.1578, 2.71, 0.147]),
    ("gumbel_high", "bfloat16"): ("bfloat16", (5,), [3.14, 5.9, -0.09], [-0.068, 0.1245, 0.1025]),
    ("gumbel_high", "float32"): ("float32", (5,), [-0.1143405, -1.3011914, 1.0195824],
        [-0.58627576, 1.2610605, 1.1571599]),
    ("gumbel_highest", "float16"): ("float16", (5,), [1.74, 0.3882, 1.727], [0.1578, 2.71, 0.147]),
    ("gumbel_highest", "bfloat16"): ("bfloat16", (5,), [3.14, 5.9, -0.09],
        [-0.068, 0.1245, 0.1025]),
    ("gumbel_highest", "float32"): ("float32", (5,), [-0.11434071, -1.3011914, 1.0195823],
        [-0.58627576, 1.2610605, 1.15716]),
    ("lognormal", "float16"): ("float16", (5,), [0.609, 0.9907, 0.6113], [1.123, 0.685, 1.675]),
    ("lognormal", "bfloat16"): ("bfloat16", (5,), [0.42, 0.235, 1.24], [1.39, 0.605, 1.17]),
    ("lognormal", "float32"): ("float32", (5,), [1.2530963, 2.6557455, 0.7725027],
        [0.46790832, 0.657326, 1.2132227]),
    ("pareto", "float16"): ("float16", (5,), [1.06, 1.253, 1.061], [1.348, 1.089, 1.876]),
    ("pareto", "bfloat16"): ("bfloat16", (5,), [1.016, 1.0, 1.44], [1.57, 1.055, 1.38]),
    ("pareto", "float32"): ("float32", (5,), [1.4531176, 3.4026585, 1.1277771],
        [1.0224319, 1.0775284, 1.4196045]),
    ("rayleigh", "float16"): ("float16", (5,), [3.828, 2.38, 3.814], [2.049, 3.457, 1.146]),
    ("rayleigh", "bfloat16"): ("bfloat16", (5,), [5.1, np.inf, 1.81], [1.55, 3.86, 1.94]),
    ("rayleigh", "float32"): ("float32", (5,), [1.7762698, 0.45352685, 3.0913284],
        [4.684328, 3.5843904, 1.8548892]),
    ("triangular", "float16"): ("float16", (5,), [0.2192, 0.4038, 0.2206], [0.4653, 0.2595, 0.675]),
    ("triangular", "bfloat16"): ("bfloat16", (5,), [0.1084, 0.0, 0.516], [0.574, 0.217, 0.488]),
    ("triangular", "float32"): ("float32", (5,), [0.52236307, 0.8667027, 0.30142325],
        [0.13898079, 0.24537264, 0.50535005]),
    ("wald", "float16"): ("float16", (5,), [0.1172, 1.0205, 0.498], [0.3906, 0.3516, 0.715]),
    ("wald", "bfloat16"): ("bfloat16", (5,), [0.438, 0.586, 0.547], [0.81, 4.0, 2.58]),
    ("wald", "float32"): ("float32", (5,), [0.41869986, 1.7837371, 0.7993423],
        [0.78456604, 0.7001348, 0.5125229]),
    ("weibull_min", "float16"): ("float16", (5,), [0.4177, 0.823, 0.4207], [0.947, 0.5044, 1.374]),
    ("weibull_min", "bfloat16"): ("bfloat16", (5,), [0.199, 0.0, 1.05], [1.164, 0.412, 0.99]),
    ("weibull_min", "float32"): ("float32", (5,), [1.0588361, 1.9166822, 0.60062087],
        [0.25797632, 0.47329634, 1.0252488]),
    ("gamma", "float16"): ("float16", (2,), [1.503, 0.0546], [1.33, 0.01604]),
    ("gamma", "bfloat16"): ("bfloat16", (2,), [1.64, 0.00525], [1.25, 0.051]),
    ("gamma", "float32"): ("float32", (2,), [2.6251302, 0.15852943], [1.116461, 0.58080965]),
    ("loggamma", "float16"): ("float16", (3,), [-0.649, -2.906, -1.178], [0.3184, -0.413, -1.385]),
    ("loggamma", "bfloat16"): ("bfloat16", (3,), [-13.0, -5.22, -4.16], [0.08, -6.25, -9.94]),
    ("loggamma", "float32"): ("float32", (3,), [-14.374847, -1.841815, -9.560441],
        [-1.1410067, -7.2378807, -11.03424]),
    ("beta", "float16"): ("float16", (3,), [0.4614, 0.0395, 0.6826], [0.2117, 0.2605, 0.587]),
    ("beta", "bfloat16"): ("bfloat16", (3,), [0.555, 0.285, 0.617], [0.149, 0.322, 0.307]),
    ("beta", "float32"): ("float32", (3,), [0.398232, 0.3440985, 0.26755336],
        [0.20947094, 0.5576794, 0.6295542]),
    ("dirichlet", "float16"): ("float16", (3,), [0.0703, 0.4275, 0.5024], [0.3167, 0.4866, 0.1962]),
    ("dirichlet", "bfloat16"): ("bfloat16", (3,), [0.079, 0.555, 0.365], [0.385, 0.09, 0.523]),
    ("dirichlet", "float32"): ("float32", (3,), [0.26655585, 0.24637803, 0.48706615],
        [0.067012325, 0.44716108, 0.48582658]),
    ("t", "float16"): ("float16", (3,), [2.324, 0.2573, -1.305], [1.477, 0.808, 0.7446]),
    ("t", "bfloat16"): ("bfloat16", (3,), [-1.47, 0.734, -0.945], [1.32, -0.793, 0.206]),
    ("t", "float32"): ("float32", (3,), [1.989271, 0.14646532, -0.49617937],
        [1.5951036, -0.7422539, -0.057075243]),
    ("chisquare", "float16"): ("float16", (3,), [1.399, 2.932, 1.96], [5.855, 5.145, 0.749]),
    ("chisquare", "bfloat16"): ("bfloat16", (3,), [1.56, 4.22, 1.22], [3.98, 0.266, 1.22]),
    ("chisquare", "float32"): ("float32", (3,), [3.0220666, 1.0437909, 1.1556823],
        [1.5582957, 3.8982656, 2.5086076]),
    ("f", "float16"): ("float16", (3,), [0.8438, 11.6, 0.2345], [1.061, 1.73, 0.4062]),
    ("f", "bfloat16"): ("bfloat16", (3,), [0.383, 1.55, 0.379], [3.38, 1.05, 1.516]),
    ("f", "float32"): ("float32", (3,), [0.4838432, 1.1076066, 1.6477009],
        [1.6504147, 0.50552416, 0.29076165]),
    ("generalized_normal", "float16"): ("float16", (3,), [-1.829, -0.08527, 1.228],
        [0.255, 0.6777, -0.2734]),
    ("generalized_normal", "bfloat16"): ("bfloat16", (3,), [-0.996, -0.17, 1.13],
        [0.44, 0.605, -1.055]),
    ("generalized_normal", "float32"): ("float32", (3,), [-0.11314882, -0.78606486, 0.058673814],
        [0.09873347, 0.932766, -0.4396967]),
    ("ball", "float16"): ("float16", (3,), [-0.416, 0.1545, 0.4546], [-0.1453, 0.6655, -0.4631]),
    ("ball", "bfloat16"): ("bfloat16", (3,), [-0.707, 0.498, 0.328], [-0.59, 0.59, -0.426]),
    ("ball", "float32"): ("float32", (3,), [-0.36388415, 0.3945854, 0.119758196],
        [-0.35065836, 0.90787613, -0.049485195]),
    ("binomial", "float16"): ("float16", (2,), [6.0, 37.0], [1.0, 39.0]),
    ("binomial", "bfloat16"): ("bfloat16", (2,), [3.0, 39.0], [2.0, 43.0]),
    ("binomial", "float32"): ("float32", (2,), [5.0, 45.0], [4.0, 43.0]),
    ("multinomial", "float16"): ("float16", (3,), [1.0, 6.0, 3.0], [2.0, 1.0, 7.0]),
    ("multinomial", "bfloat16"): ("bfloat16", (3,), [2.0, 3.0, 5.0], [1.0, 6.0, 3.0]),
    ("multinomial", "float32"): ("float32", (3,), [2.0, 4.0, 4.0], [2.0, 4.0, 4.0]),
    ("categorical", "float16"): ("int32", (6,), [1, 1, 1], [1, 1, 1]),
    ("categorical", "bfloat16"): ("int32", (6,), [2, 1, 1], [1, 2, 0]),
    ("categorical", "float32"): ("int32", (6,), [1, 1, 1], [1, 2, 2]),
    ("choice_p", "float16"): ("int32", (4,), [4, 2, 4], [4, 4, 3]),
    ("choice_p", "bfloat16"): ("int32", (4,), [4, 4, 2], [2, 3, 4]),
    ("choice_p", "float32"): ("int32", (4,), [2, 0, 3], [3, 3, 2]),
    ("choice_p_norep", "float16"): ("int32", (3,), [1, 4, 2], [2, 4, 3]),
    ("choice_p_norep", "bfloat16"): ("int32", (3,), [2, 4, 3], [4, 2, 0]),
    ("choice_p_norep", "float32"): ("int32", (3,), [1, 4, 0], [2, 4, 3]),
    ("orthogonal", "float32"): ("float32", (2, 2), [0.65811265, 0.7529195, -0.7529195],
        [-0.9883084, 0.15246835, -0.15246835]),
    ("multivariate_normal", "float32"): ("float32", (2, 2), [0.45123515, 1.9534509, -0.51623946],
        [-0.75546646, -0.73773766, -0.11654735]),
    ("randint", "int8"): ("int8", (6,), [99, 22, 0], [92, 40, 76]),
    ("randint", "int16"): ("int16", (6,), [99, 22, 0], [92, 40, 76]),
    ("randint", "int32"): ("int32", (6,), [99, 22, 0], [92, 40, 76]),
    ("randint", "uint8"): ("uint8", (6,), [99, 22, 0], [92, 40, 76]),
    ("randint", "uint16"): ("uint16", (6,), [99, 22, 0], [92, 40, 76]),
    ("randint", "uint32"): ("uint32", (6,), [99, 22, 0], [92, 40, 76]),
    ("randint_wide", "int8"): ("int8", (6,), [-97, -26, -4], [4, -28, -12]),
    ("randint_wide", "int16"): ("int16", (6,), [10767, 6766, 2324], [12052, 23004, 7788]),
    ("randint_wide", "int32"): ("int32", (6,), [66959, 67998, 5380], [42764, 83884, 21868]),
    ("randint_wide", "uint8"): ("uint8", (6,), [31, 102, 124], [132, 100, 116]),
    ("randint_wide", "uint16"): ("uint16", (6,), [36639, 19814, 20860], [29060, 41828, 40052]),
    ("randint_wide", "uint32"): ("uint32", (6,), [76959, 998, 60380], [61764, 66884, 30868]),
    ("rademacher", "int8"): ("int8", (6,), [-1, -1, 1], [1, 1, 1]),
    ("rademacher", "int16"): ("int16", (6,), [-1, -1, 1], [1, 1, 1]),
    ("rademacher", "int32"): ("int32", (6,), [-1, -1, 1], [1, 1, 1]),
    ("rademacher", "uint8"): ("uint8", (6,), [255, 255, 1], [1, 1, 1]),
    ("rademacher", "uint16"): ("uint16", (6,), [65535, 65535, 1], [1, 1, 1]),
    ("rademacher", "uint32"): ("uint32", (6,), [4294967295, 4294967295, 1], [1, 1, 1]),
    ("rademacher", "float16"): ("float16", (6,), [-1.0, -1.0, 1.0], [1.0, 1.0, 1.0]),
    ("rademacher", "bfloat16"): ("bfloat16", (6,), [-1.0, -1.0, 1.0], [1.0, 1.0, 1.0]),
    ("rademacher", "float32"): ("float32", (6,), [-1.0, -1.0, 1.0], [1.0, 1.0, 1.0]),
    ("geometric", "int8"): ("int8", (6,), [2, 1, 4], [8, 5, 3]),
    ("geometric", "int16"): ("int16", (6,), [2, 1, 4], [8, 5, 3]),
    ("geometric", "int32"): ("int32", (6,), [2, 1, 4], [8, 5, 3]),
    ("geometric", "uint8"): ("uint8", (6,), [2, 1, 4], [8, 5, 3]),
    ("geometric", "uint16"): ("uint16", (6,), [2, 1, 4], [8, 5, 3]),
    ("geometric", "uint32"): ("uint32", (6,), [2, 1, 4], [8, 5, 3]),
    ("poisson", "int8"): ("int8", (2,), [4, 36], [4, 33]),
    ("poisson", "int16"): ("int16", (2,), [4, 36], [4, 33]),
    ("poisson", "int32"): ("int32", (2,), [4, 36], [4, 33]),
    ("poisson", "uint8"): ("uint8", (2,), [4, 36], [4, 33]),
    ("poisson", "uint16"): ("uint16", (2,), [4, 36], [4, 33]),
    ("poisson", "uint32"): ("uint32", (2,), [4, 36], [4, 33]),
    ("permutation", "int8"): ("int8", (6,), [4, 2, 3], [5, 1, 4]),
    ("permutation", "int16"): ("int16", (6,), [4, 2, 3], [5, 1, 4]),
    ("permutation", "int32"): ("int32", (6,), [4, 2, 3], [5, 1, 4]),
    ("permutation", "uint8"): ("uint8", (6,), [4, 2, 3], [5, 1, 4]),
    ("permutation", "uint16"): ("uint16", (6,), [4, 2, 3], [5, 1, 4]),
    ("permutation", "uint32"): ("uint32", (6,), [4, 2, 3], [5, 1, 4]),
    ("choice", "int8"): ("int8", (4,), [9, 2, 0], [0, 3, 3]),
    ("choice", "int16"): ("int16", (4,), [9, 2, 0], [0, 3, 3]),
    ("choice", "int32"): ("int32", (4,), [9, 2, 0], [0, 3, 3]),
    ("choice", "uint8"): ("uint8", (4,), [9, 2, 0], [0, 3, 3]),
    ("choice", "uint16"): ("uint16", (4,), [9, 2, 0], [0, 3, 3]),
    ("choice", "uint32"): ("uint32", (4,), [9, 2, 0], [0, 3, 3]),

}

# On CPUs with native half-precision arithmetic (AVX512-FP16, e.g. Sapphire Rapids), XLA
# compiles float16 operations without widening them to float32, and vectorizes float32 math
# differently: a few draws round otherwise, in JAX too. These are JAX 0.10.2's draws
# recorded on such a machine, where they differ from the ones above: (partitionable,
# original), None where the same.
NATIVE_FP16_GOLDEN = {
    ("truncated_normal", "float16"): ([-0.554, 0.1547, -0.5493], [0.3662, -0.4058, 1.05]),
    ("wald", "float16"): ([0.11914, 1.0205, 0.4976], [0.3906, 0.3506, 0.7153]),
    ("beta", "float16"): ([0.4614, 0.03958, 0.6826], [0.2117, 0.2607, 0.587]),
    ("beta", "float32"): ([0.398232, 0.34409842, 0.26755336], None),
    ("dirichlet", "float16"): ([0.07037, 0.4265, 0.503], None),
    ("f", "float16"): (None, [1.059, 1.73, 0.4062]),
    ("generalized_normal", "float16"): (None, [0.2544, 0.6777, -0.2734]),
    ("ball", "float16"): ([-0.416, 0.1547, 0.4546], None),
}


def _has_native_fp16() -> bool:
  try:
    with open("/proc/cpuinfo") as f:
      return "avx512_fp16" in f.read().split()
  except OSError:
    return False


if _has_native_fp16():
  for _case, _draws in NATIVE_FP16_GOLDEN.items():
    _dtype, _shape, *_recorded = GOLDEN[_case]
    GOLDEN[_case] = (_dtype, _shape, *(new or old for new, old in zip(_draws, _recorded)))


# The layouts differ in how a key becomes bits (and how it splits), not in what a sampler
# does with the bits for each dtype: under the original layout, the samplers that turn bits
# into each width are checked for every dtype, the others for their widest one (each case
# is one more compilation of a sampler).
LAYOUT_SENSITIVE_PER_DTYPE = {"bits", "uniform", "normal", "randint", "randint_wide"}


@pytest.mark.parametrize("name", list(CASES))
def test_draws_match_jax_for_every_dtype(layout, name):
  dtype_names, draw = CASES[name]
  if not layout and name not in LAYOUT_SENSITIVE_PER_DTYPE:
    dtype_names = dtype_names[-1:]
  for dtype_name in dtype_names:
    want_dtype, want_shape, partitionable, original = GOLDEN[name, dtype_name]
    want = partitionable if layout else original
    out = np.asarray(draw(KEY, jnp.dtype(dtype_name)))
    where = f"{name} of {dtype_name}"
    assert (out.dtype.name, out.shape) == (want_dtype, want_shape), where
    np.testing.assert_array_equal(out.ravel()[:len(want)], np.array(want, out.dtype),
                                  err_msg=where)


@pytest.mark.parametrize("name", list(CASES))
def test_typed_key_draws_equal_raw_key_draws(name):
  dtype_names, draw = CASES[name]
  dtype = jnp.dtype(dtype_names[0])
  np.testing.assert_array_equal(np.asarray(draw(random.wrap_key_data(KEY), dtype)),
                                np.asarray(draw(KEY, dtype)))


@pytest.mark.parametrize("call,error", [
    (lambda: random.randint(KEY, (2,), 0, 2, jnp.bool_), TypeError),
    (lambda: random.geometric(KEY, 0.3, (2,), jnp.float32), ValueError),
    (lambda: random.poisson(KEY, 3.0, (2,), jnp.float16), ValueError),
    (lambda: random.uniform(KEY, (2,), jnp.int8), ValueError),
    (lambda: random.bits(KEY, (2,), jnp.int32), ValueError),
], ids=["randint_bool", "geometric_float", "poisson_float", "uniform_int", "bits_signed"])
def test_dtypes_a_sampler_refuses(call, error):
  """The dtypes JAX refuses raise JAX's error class."""
  with pytest.raises(error):
    call()
