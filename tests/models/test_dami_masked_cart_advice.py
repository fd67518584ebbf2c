"""A masked 'cart' column is refused by DA-MI (no likelihood to combine with the masks); the refusal
names what works: 'tree' has a likelihood too, and with proper=False (plug-in leaves) only 'tree' does
(the parametric methods are refused there, so advising one sent the user into a second refusal)."""
import pytest

from synthmi.errors import ColumnError
from synthmi.models import DAMISynthesizer
from _joint_exact import dependent_frame


@pytest.mark.parametrize("proper, advice", [
    (True, "give them 'tree' or a parametric method in 'models'"),
    (False, "give them 'tree' in 'models' (with proper=False the parametric methods have no plug-in)"),
])
def test_masked_cart_refusal_advises_what_the_setting_accepts(proper, advice):
    s = DAMISynthesizer(masks={"a": {"alpha": 1.0}}, models={"a": "cart", "b": "tree", "c": "tree"}, proper=proper,
                        progressbar=False)
    with pytest.raises(ColumnError, match=r"Columns \['a'\] are masked but synthesized by 'cart'") as err:
        s.fit(dependent_frame(), quasi_identifiers=["a", "b", "c"], keep=["z"])
    assert advice in str(err.value)
