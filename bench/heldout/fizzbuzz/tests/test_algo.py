from algo import label


def test_fizz():
    assert label(3) == "Fizz"


def test_fizzbuzz():
    assert label(15) == "FizzBuzz"
