"""vime.contract.checks.values on exact values: which numbers are finite reals, how a tensor,
array or numpy scalar is described (VIM122), the reward and real-number findings (severity and
text), and the first path json.dumps trips on."""

from __future__ import annotations

import numbers
from fractions import Fraction

import numpy as np
import pytest

from vime.contract.checks.values import (
    array_number,
    is_finite_real,
    json_problem,
    keyed_reward,
    real_problem,
    reward_problem,
)

pytestmark = pytest.mark.unit

_ITEM_HINT = "; call .item() on tensors and numpy arrays"


def _fake(module: str, name: str, **attrs):
    """An instance of a class named ``name`` whose ``__module__`` is ``module`` (a tensor
    stand-in: array_number reads only the module, the class name, shape and dtype)."""
    cls = type(name, (), {"__module__": module})
    obj = cls()
    for key, value in attrs.items():
        setattr(obj, key, value)
    return obj


class _Unconvertible(numbers.Real):
    """A numbers.Real whose float() raises."""

    def __float__(self):
        raise OverflowError("too big")

    # the abstract methods numbers.Real asks for; none is called
    __abs__ = __add__ = __ceil__ = __eq__ = __floor__ = __floordiv__ = __le__ = __lt__ = \
        __mod__ = __mul__ = __neg__ = __pos__ = __pow__ = __radd__ = __rfloordiv__ = \
        __rmod__ = __rmul__ = __round__ = __rpow__ = __rtruediv__ = __truediv__ = \
        __trunc__ = lambda *a: None  # noqa: E731

    __hash__ = object.__hash__


# --- is_finite_real ------------------------------------------------------------------------

@pytest.mark.parametrize("value", [0.5, 0.0, -3, 0, 10 ** 400, Fraction(1, 2), np.float32(0.5),
                                   np.int64(3)])
def test_finite_reals(value):
    assert is_finite_real(value) is True


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), True, False,
                                   "1.0", None, [1.0], np.float32("nan"), _Unconvertible()])
def test_not_finite_reals(value):
    assert is_finite_real(value) is False


# --- array_number ---------------------------------------------------------------------------

@pytest.mark.parametrize("value", [0.5, 3, True, None, "x", np.float64(0.5), [1.0]])
def test_array_number_none_for_python_numbers_and_numpy_float64(value):
    assert array_number(value) is None


def test_array_number_numpy_array():
    assert array_number(np.zeros((2, 3), dtype=np.float32)) == (
        "a numpy.ndarray of shape (2, 3), dtype float32", 6)


def test_array_number_zero_dim_numpy_array_is_not_a_scalar():
    assert array_number(np.array(0.5)) == ("a numpy.ndarray of shape (), dtype float64", 1)


def test_array_number_numpy_scalars():
    assert array_number(np.float32(0.5)) == ("a numpy.float32 scalar", 1)
    assert array_number(np.int64(2)) == ("a numpy.int64 scalar", 1)
    assert array_number(np.bool_(True)) == ("a numpy.bool scalar", 1)


def test_array_number_torch_like_tensors():
    one = _fake("torch", "Tensor", shape=(1,), dtype="torch.float32")
    assert array_number(one) == ("a torch.Tensor of shape (1,), dtype torch.float32", 1)
    # 0-dim: not a "scalar" (that wording is numpy's), one element
    zero = _fake("torch", "Tensor", shape=(), dtype="torch.float32")
    assert array_number(zero) == ("a torch.Tensor of shape (), dtype torch.float32", 1)
    four = _fake("torch", "Tensor", shape=[2, 2], dtype="torch.int64")
    assert array_number(four) == ("a torch.Tensor of shape (2, 2), dtype torch.int64", 4)


def test_array_number_package_is_the_first_part_of_the_module():
    param = _fake("torch.nn.parameter", "Parameter", shape=(3,), dtype="torch.float32")
    assert array_number(param) == ("a torch.Parameter of shape (3,), dtype torch.float32", 3)
    jax = _fake("jaxlib.xla_extension", "ArrayImpl", shape=(2,), dtype="float32")
    assert array_number(jax) == ("a jaxlib.ArrayImpl of shape (2,), dtype float32", 2)
    assert array_number(_fake("jax", "Array", shape=(5,), dtype="int32")) == (
        "a jax.Array of shape (5,), dtype int32", 5)
    # a package that merely contains one of the names is not one
    assert array_number(_fake("numpyish", "ndarray", shape=(2,), dtype="f")) is None
    assert array_number(_fake("mytorch.core", "Tensor", shape=(2,), dtype="f")) is None


def test_array_number_without_dtype_or_shape():
    assert array_number(_fake("torch", "Tensor", shape=(2,))) == (
        "a torch.Tensor of shape (2,), dtype ?", 2)
    assert array_number(_fake("torch", "Tensor")) == ("a torch.Tensor", None)
    assert array_number(_fake("numpy", "weird")) == ("a numpy.weird", None)


@pytest.mark.parametrize("shape", [["a"], 5, [None]])
def test_array_number_unreadable_shape(shape):
    assert array_number(_fake("torch", "Tensor", shape=shape, dtype="x")) == (
        "a torch.Tensor", None)


# --- real_problem ---------------------------------------------------------------------------

def test_real_problem_none_for_finite_reals():
    assert real_problem(0.25) is None
    assert real_problem(7) is None
    assert real_problem(np.float32(1.0)) is None


def test_real_problem_bool_is_a_warning():
    assert real_problem(True) == ("warning", "is a bool (True); store a float (1.0 / 0.0)")
    assert real_problem(False) == ("warning", "is a bool (False); store a float (1.0 / 0.0)")


def test_real_problem_non_finite():
    assert real_problem(float("nan")) == ("error", "is nan, expected a finite real")
    assert real_problem(float("-inf")) == ("error", "is -inf, expected a finite real")


def test_real_problem_not_a_number():
    assert real_problem("0.5") == ("error", "is '0.5' (str), expected a finite real")
    assert real_problem(None) == ("error", "is None (NoneType), expected a finite real")
    assert real_problem([1, 2]) == ("error", "is a list of 2 item(s), expected a finite real")


def test_real_problem_item_hint_for_arrays():
    assert real_problem(np.array([1.0, 2.0])) == (
        "error", "is array([1., 2.]) (ndarray), expected a finite real" + _ITEM_HINT)
    tensor = _fake("torch", "Tensor", shape=(2,), item=lambda: 1.0)
    assert real_problem(tensor)[0] == "error"
    assert real_problem(tensor)[1].endswith("expected a finite real" + _ITEM_HINT)


# --- reward_problem -------------------------------------------------------------------------

def test_reward_problem_valid():
    assert reward_problem(0.5, None) is None
    assert reward_problem(1, "acc") is None
    assert reward_problem({"acc": 1.0, "fmt": "x"}, "acc") is None


def test_reward_problem_unreadable_is_an_error():
    assert reward_problem(None, None) == (
        "error", "is None; every sample needs a reward before training")
    assert reward_problem({"b": 1.0, "a": 0.0}, None) == (
        "error", "is a dict with keys ['a', 'b'] but --reward-key is not set")
    assert reward_problem({"a": 0.0}, "acc") == (
        "error", "is a dict without the key 'acc' (--reward-key); it has ['a']")


def test_reward_problem_key_arg_names_the_flag():
    assert reward_problem({"a": 0.0}, None, key_arg="--eval-reward-key") == (
        "error", "is a dict with keys ['a'] but --eval-reward-key is not set")


def test_reward_problem_scalar():
    assert reward_problem(True, None) == ("warning", "is a bool (True); store a float (1.0 / 0.0)")
    assert reward_problem(float("nan"), None) == ("error", "is nan, expected a finite real")
    assert reward_problem("1", None) == ("error", "is '1' (str), expected a finite real")


def test_reward_problem_in_a_dict_names_the_key():
    assert reward_problem({"acc": False}, "acc") == (
        "warning", "['acc'] is a bool (False); store a float (1.0 / 0.0)")
    assert reward_problem({"acc": float("inf")}, "acc") == (
        "error", "['acc'] is inf, expected a finite real")
    assert reward_problem({"acc": None}, "acc") == (
        "error", "['acc'] is None (NoneType), expected a finite real")


# --- json_problem ---------------------------------------------------------------------------

def test_json_problem_none_when_dumps_works():
    assert json_problem({"a": [1, 2.5, "x", None, True], "b": {"c": (1, 2)}}) is None
    assert json_problem(float("nan")) is None


def test_json_problem_top_level_has_no_leading_space():
    assert json_problem({1, 2}) == "is a set, not JSON-serialisable"


def test_json_problem_names_the_first_bad_path():
    assert json_problem({"scores": [1, 2, np.zeros(2)]}) == (
        "['scores'][2] is a ndarray, not JSON-serialisable")
    assert json_problem([0, {"k": b"x"}]) == "[1]['k'] is a bytes, not JSON-serialisable"
    assert json_problem({"ok": 1, "bad": {(1, 2): 3}}) == (
        "['bad'][(1, 2)] (key) is a tuple, not JSON-serialisable")


def test_json_problem_cycles():
    loop: list = [1]
    loop.append(loop)
    assert json_problem(loop) == "[1] is a list, not JSON-serialisable"
    node: dict = {"a": 1}
    node["self"] = node
    assert json_problem(node) == "['self'] is a dict, not JSON-serialisable"
    # the same (acyclic) list twice is no cycle for json.dumps, and a bad value after it is found
    shared = [1]
    assert json_problem({"x": shared, "y": shared, "z": {3}}) == (
        "['z'] is a set, not JSON-serialisable")
    inner = {"k": 1}
    assert json_problem([inner, inner, {3}]) == "[2] is a set, not JSON-serialisable"


def test_json_problem_when_no_path_is_bad():
    # json.dumps refuses an int of more than 4300 digits, which is a JSON scalar type
    text = json_problem({"n": 10 ** 5000})
    assert text is not None
    assert text.startswith("does not pass json.dumps (ValueError: Exceeds the limit")
    assert text.endswith(")")


# --- keyed_reward ---------------------------------------------------------------------------

def test_keyed_reward():
    assert keyed_reward({"acc": 0.75, "fmt": 1.0}, "acc") == 0.75
    assert keyed_reward({"acc": 0.75}, "other") is None
    reward = {"acc": 0.75}
    assert keyed_reward(reward, None) is reward
    assert keyed_reward(reward, "") is reward
    assert keyed_reward(0.5, "acc") == 0.5
