import pytest

from bank import BankAccount


def test_withdraw_takes_amount_plus_fee():
    account = BankAccount("ana", 100)
    account.withdraw(30)
    assert account.balance == 69


def test_withdraw_everything_leaves_zero():
    account = BankAccount("ana", 51)
    assert account.withdraw(50) == 0


def test_deposit_increases_balance():
    account = BankAccount("bo")
    assert account.deposit(25) == 25
    assert account.deposit(5) == 30


def test_deposit_must_be_positive():
    with pytest.raises(ValueError):
        BankAccount("bo").deposit(0)


def test_negative_opening_balance_rejected():
    with pytest.raises(ValueError):
        BankAccount("bo", -1)


def test_can_withdraw_includes_fee():
    account = BankAccount("cy", 10)
    assert account.can_withdraw(9) is True
    assert account.can_withdraw(10) is False


def test_withdraw_insufficient_funds_keeps_balance():
    account = BankAccount("cy", 10)
    with pytest.raises(ValueError):
        account.withdraw(10)
    assert account.balance == 10


def test_withdraw_must_be_positive():
    with pytest.raises(ValueError):
        BankAccount("cy", 10).withdraw(-5)


def test_withdraw_is_recorded_in_history():
    account = BankAccount("di", 20)
    account.deposit(5)
    account.withdraw(4)
    assert account.history == [("deposit", 5), ("withdraw", 4)]


def test_repr():
    assert repr(BankAccount("ed", 3)) == "BankAccount('ed', balance=3)"
